//! Tests of the model-backed web tools against local servers.
