//! The SQLite database: one file in the Souz home, WAL, foreign keys on, a busy timeout, and
//! append-only migrations tracked by `PRAGMA user_version`.
//!
//! Async code never blocks on SQLite: every call runs on the blocking pool with its own
//! connection. Writes are serialized through one writer connection and always run inside an
//! `IMMEDIATE` transaction; reads use a small pool of reader connections (WAL lets them run while
//! a write is in progress). Each domain owns its tables and brings its migrations to
//! [`migrations::MIGRATIONS`].
//!
//! The file is opened like the daemon's other files: its folder (the Souz home) is trusted and
//! resolved once, and SQLite opens the resulting path with `SQLITE_OPEN_NOFOLLOW`, so a link at
//! the database is refused ([`StoreError::Refused`]). SQLite's unix VFS opens the `-wal`,
//! `-shm` and `-journal` companions with `O_NOFOLLOW` itself; they are also checked beforehand
//! so a link or a non-regular file there is refused with its name rather than SQLite's
//! "unable to open database file".

pub(crate) mod codec;
pub(crate) mod migrations;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::sandbox::beneath::daemon_file::{DaemonFileError, DaemonFolder};

pub use migrations::{MIGRATIONS, Migration, SCHEMA_VERSION};

/// How long a connection waits for a lock held by another connection before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Reader connections kept open between calls.
const MAX_IDLE_READERS: usize = 4;
/// Prepared statements each connection keeps (see [`CachedStatements`]).
const STATEMENT_CACHE: usize = 128;
/// The most a reader's page cache holds, in KiB (SQLite's default is 2 MiB). It fills only
/// with pages read, and a commit by the writer empties it; the bigger ceiling keeps one
/// large read (memory recall over 100k facts ranks thousands of full-text matches) from
/// evicting its own pages halfway through.
const READER_CACHE_KIB: usize = 8 * 1024;
/// How much of the database file a reader maps into memory instead of copying pages in with
/// a read call each (SQLite's `mmap_size`). Reads that jump between rows of big tables (the
/// facts a recall ranked, the candidates it checks) cost a system call and a 4 KiB copy a page
/// without it; mapped, a page the kernel has cached is one memory access. Address space only:
/// resident memory grows by the pages touched, which the kernel can drop at any time.
const READER_MMAP_BYTES: usize = 256 * 1024 * 1024;

/// What can go wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database was written by a newer Souz.
    #[error(
        "database {path} has schema version {found}, but this Souz knows only up to version \
         {known}; it was written by a newer Souz. Upgrade Souz, or move the file away to start \
         fresh (nothing was changed)"
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest version this binary knows.
        known: i64,
    },
    /// The database could not be opened or configured.
    #[error("cannot open database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A migration failed; the transaction was rolled back.
    #[error("database migration {version} ({name}) failed: {source}")]
    Migration {
        /// The version it would have produced.
        version: i64,
        /// Its name.
        name: &'static str,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A query failed.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Stored JSON could not be decoded.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The store was closed (the daemon is shutting down).
    #[error("the database is closed")]
    Closed,
    /// The database or one of its companions (`-wal`, `-shm`, `-journal`) is a symbolic link
    /// or not a regular file.
    #[error("cannot open the database: {0}")]
    Refused(#[source] DaemonFileError),
    /// The blocking task running the query panicked or was cancelled.
    #[error("database task failed: {0}")]
    Task(String),
}

/// Cheap-to-clone handle to the database.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Option<Connection>>,
    readers: Mutex<Vec<Connection>>,
    closed: AtomicBool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish()
    }
}

impl Store {
    /// The user whose chat `chat_id` is (`None` for no such chat): for the layers below the
    /// chat service that act on a chat's behalf (the gate's workspaces, the schedule tools).
    pub(crate) async fn chat_owner(&self, chat_id: &str) -> Result<Option<String>, StoreError> {
        use rusqlite::OptionalExtension;
        let id = chat_id.to_owned();
        self.read(move |connection| {
            connection
                .query_row("SELECT user_id FROM chats WHERE id = ?1", [&id], |row| {
                    row.get::<_, String>(0)
                })
                .optional()
                .map_err(StoreError::from)
        })
        .await
    }

    /// Opens (creating if needed) the database at `path` and applies pending migrations in one
    /// transaction. A database from a newer Souz is refused before anything is written.
    pub async fn open(path: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let asked = path.into();
        let (path, writer) = run_blocking(move || {
            let path = database_path(&asked)?;
            let writer = open_writer(&path)?;
            Ok::<_, StoreError>((path, writer))
        })
        .await?;
        Ok(Self {
            inner: Arc::new(Inner {
                path,
                writer: Mutex::new(Some(writer)),
                readers: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `work` inside an `IMMEDIATE` transaction on the writer connection; commits when it
    /// returns `Ok`, rolls back otherwise.
    pub async fn write<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Transaction<'_>) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            if inner.closed.load(Ordering::Acquire) {
                return Err(E::from(StoreError::Closed));
            }
            let mut guard = inner.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let connection = guard.as_mut().ok_or(StoreError::Closed)?;
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(StoreError::from)?;
            let value = work(&transaction)?;
            transaction.commit().map_err(StoreError::from)?;
            Ok(value)
        })
        .await
    }

    /// Runs `work` on a reader connection.
    pub async fn read<T, E, F>(&self, work: F) -> Result<T, E>
    where
        F: FnOnce(&Connection) -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            if inner.closed.load(Ordering::Acquire) {
                return Err(E::from(StoreError::Closed));
            }
            let pooled = inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let connection = match pooled {
                Some(connection) => connection,
                None => open_reader(&inner.path)?,
            };
            let result = work(&connection);
            let mut readers = inner.readers.lock().unwrap_or_else(PoisonError::into_inner);
            if readers.len() < MAX_IDLE_READERS && !inner.closed.load(Ordering::Acquire) {
                readers.push(connection);
            }
            result
        })
        .await
    }

    /// Whether the database answers a trivial query.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.read(|connection| {
            connection
                .query_row("SELECT 1", [], |_| Ok(()))
                .map_err(StoreError::from)
        })
        .await
    }

    /// Checkpoints the WAL and closes every connection. Later calls fail with
    /// [`StoreError::Closed`]. Idempotent.
    pub async fn close(&self) -> Result<(), StoreError> {
        let inner = Arc::clone(&self.inner);
        run_blocking(move || {
            inner.closed.store(true, Ordering::Release);
            inner
                .readers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            let writer = inner
                .writer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(connection) = writer {
                connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
                connection
                    .close()
                    .map_err(|(_, error)| StoreError::from(error))?;
            }
            Ok(())
        })
        .await
    }
}

async fn run_blocking<T, E, F>(work: F) -> Result<T, E>
where
    F: FnOnce() -> Result<T, E> + Send + 'static,
    T: Send + 'static,
    E: From<StoreError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| E::from(StoreError::Task(error.to_string())))?
}

/// `execute` and `query_row` through the connection's statement cache: the statements of the
/// hot paths (a tool call's row, events, audit, chat records) are parsed once per connection
/// instead of on every use. A transaction is a connection too (it derefs to one).
pub trait CachedStatements {
    /// [`Connection::execute`] with a cached statement.
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;

    /// [`Connection::query_row`] with a cached statement.
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, row: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl CachedStatements for Connection {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, row: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, row)
    }
}

fn open_writer(path: &Path) -> Result<Connection, StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let existed = path.exists();
    let mut connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(open_error)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // Refuse a newer schema before anything (even the WAL switch) writes to the file.
    let found = user_version(&connection).map_err(open_error)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            path: path.to_owned(),
            found,
            known: SCHEMA_VERSION,
        });
    }
    if !existed {
        restrict_permissions(path);
    }
    let mode: String = connection
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(open_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "SQLite refused WAL mode; continuing with this journal mode");
    }
    connection
        .execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")
        .map_err(open_error)?;
    migrations::migrate(&mut connection, path)?;
    Ok(connection)
}

fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let open_error = |source| StoreError::Open {
        path: path.to_owned(),
        source,
    };
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(open_error)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    connection
        .execute_batch(&format!(
            "PRAGMA foreign_keys = ON; PRAGMA cache_size = -{READER_CACHE_KIB}; \
             PRAGMA mmap_size = {READER_MMAP_BYTES};"
        ))
        .map_err(open_error)?;
    Ok(connection)
}

/// Reads `PRAGMA user_version`.
pub fn user_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// The files SQLite keeps next to the database.
const COMPANIONS: [&str; 4] = ["", "-wal", "-shm", "-journal"];

/// `path` with its folder resolved (the folder is trusted; `SQLITE_OPEN_NOFOLLOW` refuses a link
/// at any component, including a person's linked home), after checking that neither the
/// database nor a companion is a link or a non-regular file.
fn database_path(path: &Path) -> Result<PathBuf, StoreError> {
    let refused = StoreError::Refused;
    let (folder, name) = match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => (parent, name),
        (_, Some(name)) => (Path::new("."), name),
        _ => {
            return Err(refused(DaemonFileError::NotRegular(path.to_owned())));
        }
    };
    let folder = std::fs::canonicalize(folder).map_err(|source| {
        refused(DaemonFileError::Io {
            action: "open the folder",
            path: folder.to_owned(),
            source,
        })
    })?;
    let handle = DaemonFolder::anchor(&folder).map_err(refused)?;
    for suffix in COMPANIONS {
        let mut companion = name.to_os_string();
        companion.push(suffix);
        handle.existing(&companion).map_err(refused)?;
    }
    Ok(folder.join(name))
}

/// Makes a database this call created owner-only, through a handle (never by a followed path).
fn restrict_permissions(path: &Path) {
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let file = DaemonFolder::anchor(folder).and_then(|folder| folder.open_file(name));
    let result = match file {
        Ok(Some(file)) => rustix::fs::fchmod(&file, rustix::fs::Mode::from_bits_truncate(0o600))
            .map_err(|errno| errno.to_string()),
        Ok(None) => Ok(()),
        Err(error) => Err(error.to_string()),
    };
    if let Err(error) = result {
        tracing::warn!(path = %path.display(), %error, "could not make the database owner-only");
    }
}

#[cfg(test)]
mod tests;
