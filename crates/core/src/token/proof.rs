//! The daemon's proof of identity (`GET /v1/identity`): the computation is part of the wire
//! contract and lives in [`souz_protocol::identity`], shared with every client; the daemon
//! proves with [`prove`], clients check with
//! [`souz_protocol::identity::verify`].

pub(crate) use souz_protocol::identity::{digest, key_id, new_nonce, prove, valid_nonce};
