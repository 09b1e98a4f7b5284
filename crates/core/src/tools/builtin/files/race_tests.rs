//! Check-then-use races, as an attacker on the machine would run them: a thread keeps swapping
//! a folder inside the root with a symbolic link to a folder outside (atomically, with
//! `RENAME_EXCHANGE`, as fast as it can) while each file tool is called [`CALLS`] times on
//! paths through that folder. The outside folder holds files and names carrying [`SECRET`] and
//! decoys with the names the tools are asked to write, move or delete.
//!
//! Zero escapes means: the secret never appears in any result or error, and nothing outside
//! the root is created, changed, moved or deleted. On the code before `sandbox::beneath` (paths
//! used again after the check) these tests found escapes in every tool (one run: read 18,
//! list 5, find files 5, find folders 122, search 82, create 31, edit 146, move 495, delete
//! 367; into a protected folder: read 5, search 25, create 83).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use rustix::fs::{CWD, Mode, OFlags, RenameFlags};

use super::testing::TestHome;
use super::*;
use crate::tools::builtin::documents::{ExtractTextArgs, ExtractTextFromFile};
use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Calls of each tool while the folder is being swapped.
const CALLS: usize = 10_000;
/// What must never come back from outside the root.
const SECRET: &str = "TOPSECRET7F3A";

/// A root with `~/w/box` (real) and `~/w/swap` (a link to the outside folder), swapped with
/// each other without pause until the race ends.
struct Race {
    home: TestHome,
    ctx: ToolContext,
    /// The real folder, wherever the swapper put it (a handle follows a renamed folder).
    inside: OwnedFd,
    /// The folder the link points to, outside every root.
    outside: PathBuf,
    /// What the outside folder holds when no tool has escaped.
    expected: BTreeMap<OsString, Vec<u8>>,
    stop: Arc<AtomicBool>,
    swapper: Option<JoinHandle<()>>,
    escapes: usize,
    /// Calls that worked, and calls that were refused (both must happen, or nothing raced).
    succeeded: usize,
    refused: usize,
}

/// Where the swapped-in link leads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LinkTo {
    /// A folder outside every root.
    Outside,
    /// A protected folder inside the root (`~/.ssh`): reaching it needs the person's yes,
    /// which these calls never get.
    Protected,
}

impl Race {
    fn start() -> Self {
        Self::start_to(LinkTo::Outside)
    }

    fn start_to(link_to: LinkTo) -> Self {
        let home = TestHome::new();
        home.write("w/box/doc.txt", "harmless text\n");
        home.write("w/box/sub/inner.txt", "inner harmless\n");
        home.write("w/box/edit.txt", "v");
        home.folder("w/stable");
        let outside = match link_to {
            LinkTo::Outside => home.outside("box"),
            LinkTo::Protected => home.path(".ssh"),
        };
        for (name, content) in [
            ("doc.txt".to_owned(), format!("harmless {SECRET}\n")),
            ("edit.txt".to_owned(), format!("v {SECRET}")),
            (format!("inner-{SECRET}.txt"), format!("harmless {SECRET}")),
            (format!("sub{SECRET}/inner.txt"), SECRET.to_owned()),
            ("sub/inner.txt".to_owned(), format!("harmless {SECRET}")),
            (format!("sub/inner-{SECRET}.txt"), SECRET.to_owned()),
        ] {
            let path = outside.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        let swap = home.symlink(&outside, "w/swap");
        let inside = rustix::fs::open(
            home.path("w/box"),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let trash = home.outside("trash");
        let sandbox = (*home.ctx.sandbox).clone().with_trash_folder(&trash);
        let ctx = ToolContext {
            sandbox: Arc::new(sandbox),
            ..home.ctx.clone()
        };
        let expected = snapshot(&outside);
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let stop = Arc::clone(&stop);
            let folder = home.path("w/box");
            std::thread::spawn(move || {
                let mut swapped = false;
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(CWD, &folder, CWD, &swap, RenameFlags::EXCHANGE)
                        .unwrap();
                    swapped = !swapped;
                }
                if swapped {
                    rustix::fs::renameat_with(CWD, &folder, CWD, &swap, RenameFlags::EXCHANGE)
                        .unwrap();
                }
            })
        };
        Self {
            home,
            ctx,
            inside,
            outside,
            expected,
            stop,
            swapper: Some(swapper),
            escapes: 0,
            succeeded: 0,
            refused: 0,
        }
    }

    /// Creates `name` in the real folder, wherever it is now.
    fn put_inside(&self, name: &str, content: &str) {
        let file = rustix::fs::openat(
            &self.inside,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
            Mode::from_bits_truncate(0o644),
        )
        .unwrap();
        rustix::io::write(&file, content.as_bytes()).unwrap();
    }

    /// Puts a decoy `name` outside (what an escaped move or delete would take).
    fn put_decoy(&mut self, name: &str) {
        std::fs::write(self.outside.join(name), SECRET).unwrap();
        self.expected
            .insert(OsString::from(name), SECRET.as_bytes().to_vec());
    }

    /// Removes the decoy again (outside, where nothing else may touch it).
    fn clear_decoy(&mut self, name: &str) {
        let _ = std::fs::remove_file(self.outside.join(name));
        self.expected.remove(&OsString::from(name));
    }

    /// Counts an escape when `result` shows the secret.
    fn check_result(&mut self, result: &Result<ToolOutput, ToolError>) {
        self.check_result_found(result, None);
    }

    /// Like [`Race::check_result`]; with `found`, a call worked only when its output shows
    /// that text (for searches, which succeed with fewer results instead of failing).
    fn check_result_found(&mut self, result: &Result<ToolOutput, ToolError>, found: Option<&str>) {
        let shown = match result {
            Ok(output) => format!("{} {:?}", output.text, output.structured),
            Err(error) => error.to_string(),
        };
        let worked = result.is_ok() && found.is_none_or(|found| shown.contains(found));
        if worked {
            self.succeeded += 1;
        } else {
            self.refused += 1;
        }
        if shown.contains(SECRET) {
            self.escapes += 1;
        }
    }

    /// Counts an escape when the outside folder changed, and puts it back.
    fn check_outside(&mut self) {
        let now = snapshot(&self.outside);
        if now != self.expected {
            self.escapes += 1;
            let _ = std::fs::remove_dir_all(&self.outside);
            for (name, content) in &self.expected {
                let path = self.outside.join(PathBuf::from(name));
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, content).unwrap();
            }
        }
    }

    /// Stops the swapper and returns the escapes seen.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(swapper) = self.swapper.take() {
            swapper.join().unwrap();
        }
        self.check_outside();
        eprintln!(
            "{} calls worked, {} were refused, {} escaped",
            self.succeeded, self.refused, self.escapes
        );
        assert!(
            self.succeeded > 0 && self.refused > 0,
            "the swap did not race the calls ({} worked, {} refused)",
            self.succeeded,
            self.refused
        );
        self.escapes
    }
}

/// Every file under `folder` (relative name -> content); folders appear through their files.
fn snapshot(folder: &Path) -> BTreeMap<OsString, Vec<u8>> {
    let mut files = BTreeMap::new();
    if !folder.exists() {
        return files;
    }
    let mut pending = vec![folder.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            if metadata.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(folder).unwrap().as_os_str().to_owned();
                files.insert(relative, std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

/// Plans and runs one call as an approved call would; a refused plan is the result. A plan
/// that names a protected path is denied, as the person would be asked and say no.
async fn call<T: Tool>(
    tool: &T,
    ctx: &ToolContext,
    args: impl Fn() -> T::Args,
) -> Result<ToolOutput, ToolError> {
    let planned = tool.plan(&args(), ctx).await?;
    let protected = planned.plan.targets.iter().any(|target| {
        matches!(
            target,
            crate::approvals::CallTarget::Path {
                protected: true,
                ..
            }
        )
    });
    if protected {
        return Err(ToolError::Failed(
            "denied: the plan names a protected path".into(),
        ));
    }
    tool.run(args(), planned.prepared, ctx).await
}

#[tokio::test]
async fn reading_a_file_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&ExtractTextFromFile, &race.ctx, || ExtractTextArgs {
            file_path: "~/w/box/doc.txt".into(),
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "reads escaped the root");
}

#[tokio::test]
async fn listing_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&ListFiles, &race.ctx, || ListFilesArgs {
            path: "~/w/box".into(),
            depth: None,
            include_hidden: false,
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "listings escaped the root");
}

#[tokio::test]
async fn finding_files_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&FindFilesByName, &race.ctx, || FindFilesByNameArgs {
            path: "~/w/box".into(),
            file_name: "inner".into(),
            include_hidden: false,
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "file searches escaped the root");
}

#[tokio::test]
async fn finding_folders_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&FindFolders, &race.ctx, || FindFoldersArgs {
            name: "sub".into(),
        })
        .await;
        race.check_result_found(&result, Some("w/box/sub"));
    }
    assert_eq!(race.finish(), 0, "folder searches escaped the root");
}

#[tokio::test]
async fn searching_content_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&SearchFileContent, &race.ctx, || SearchFileContentArgs {
            path: "~/w/box".into(),
            query: "harmless".into(),
            include_hidden: false,
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "content searches escaped the root");
}

#[tokio::test]
async fn creating_files_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for index in 0..CALLS {
        let path = format!("~/w/box/new-{index}/n.txt");
        let result = call(&NewFile, &race.ctx, || NewFileArgs {
            path: path.clone(),
            text: "new".into(),
        })
        .await;
        race.check_result(&result);
        race.check_outside();
    }
    assert_eq!(race.finish(), 0, "writes escaped the root");
}

#[tokio::test]
async fn editing_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for _ in 0..CALLS {
        let result = call(&EditFile, &race.ctx, || EditFileArgs {
            path: "~/w/box/edit.txt".into(),
            old_string: "v".into(),
            new_string: "vw".into(),
            replace_all: false,
        })
        .await;
        race.check_result(&result);
        race.check_outside();
    }
    assert_eq!(race.finish(), 0, "edits escaped the root");
}

#[tokio::test]
async fn moving_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for index in 0..CALLS {
        let name = format!("m{index}.txt");
        let (from, to) = if index % 2 == 0 {
            // Into the swapped folder: an escape writes outside.
            race.home.write(&format!("w/stable/{name}"), "mine");
            (format!("~/w/stable/{name}"), format!("~/w/box/{name}"))
        } else {
            // Out of it: an escape takes the decoy from outside.
            race.put_inside(&name, "mine");
            race.put_decoy(&name);
            (format!("~/w/box/{name}"), format!("~/w/stable/b{name}"))
        };
        let result = call(&MoveFile, &race.ctx, || MoveFileArgs {
            source_path: from.clone(),
            destination_path: to.clone(),
        })
        .await;
        race.check_result(&result);
        race.check_outside();
        if index % 2 == 1 {
            race.clear_decoy(&name);
        }
    }
    let moved_in = snapshot(&race.home.path("w/stable"));
    let escapes = race.finish();
    assert!(
        moved_in.values().all(|content| content == b"mine"),
        "a file from outside was moved into the root"
    );
    assert_eq!(escapes, 0, "moves escaped the root");
}

#[tokio::test]
async fn deleting_never_escapes_a_swapped_folder() {
    let mut race = Race::start();
    for index in 0..CALLS {
        let name = format!("d{index}.txt");
        race.put_inside(&name, "mine");
        race.put_decoy(&name);
        let result = call(&DeleteFile, &race.ctx, || DeleteFileArgs {
            path: format!("~/w/box/{name}"),
        })
        .await;
        race.check_result(&result);
        race.check_outside();
        race.clear_decoy(&name);
    }
    let trashed = snapshot(&race.home.outside("trash/files"));
    let escapes = race.finish();
    assert!(
        trashed.values().all(|content| content == b"mine"),
        "a file from outside was trashed"
    );
    assert_eq!(escapes, 0, "deletes escaped the root");
}

#[tokio::test]
async fn reading_never_reaches_a_protected_folder_swapped_in() {
    let mut race = Race::start_to(LinkTo::Protected);
    for _ in 0..CALLS {
        let result = call(&ExtractTextFromFile, &race.ctx, || ExtractTextArgs {
            file_path: "~/w/box/doc.txt".into(),
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "reads reached the protected folder");
}

#[tokio::test]
async fn searching_never_reaches_a_protected_folder_swapped_in() {
    let mut race = Race::start_to(LinkTo::Protected);
    for _ in 0..CALLS {
        let result = call(&SearchFileContent, &race.ctx, || SearchFileContentArgs {
            path: "~/w/box".into(),
            query: "harmless".into(),
            include_hidden: false,
        })
        .await;
        race.check_result(&result);
    }
    assert_eq!(race.finish(), 0, "searches reached the protected folder");
}

#[tokio::test]
async fn writing_never_reaches_a_protected_folder_swapped_in() {
    let mut race = Race::start_to(LinkTo::Protected);
    for index in 0..CALLS {
        let path = format!("~/w/box/new-{index}.txt");
        let result = call(&NewFile, &race.ctx, || NewFileArgs {
            path: path.clone(),
            text: "new".into(),
        })
        .await;
        race.check_result(&result);
        race.check_outside();
    }
    assert_eq!(race.finish(), 0, "writes reached the protected folder");
}
