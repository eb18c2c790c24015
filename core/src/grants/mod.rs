//! What a host lets built-in probes reach: which programs they may run,
//! which files they may read, and whether a tmux socket may be named by
//! path. Nothing by default: a wait tool widens what an agent can
//! observe, never what it can do, so every reach is the host's choice.

use crate::error::{Rule, SpecError};
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

/// Which programs built-in command probes (the spec's `command` probe,
/// AURA's `run_command` tool) may run.
///
/// ```
/// use waitfor::grants::Commands;
/// let only = Commands::Only(vec!["kubectl".into(), "curl".into()]);
/// assert_ne!(only, Commands::None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Commands {
    /// No program at all (the default).
    #[default]
    None,
    /// Any program (a user at their own shell, such as the `waitfor` command).
    Any,
    /// Only these programs, compared with `argv[0]` exactly as given
    /// (`"kubectl"` does not allow `"/usr/bin/kubectl"`). A program that runs
    /// others (a shell, `env`, `xargs`) grants what it can run.
    Only(Vec<String>),
}

/// What built-in probes may reach. The default grants nothing but tmux
/// sockets named by name.
///
/// ```
/// use waitfor::grants::{Commands, Grants};
/// let grants = Grants::none()
///     .commands(Commands::Only(vec!["echo".into()]))
///     .file_root("/var/log");
/// assert!(grants.check_command(&["echo".to_string(), "hi".to_string()]).is_ok());
/// assert!(grants.check_command(&["sh".to_string()]).is_err());
/// assert!(grants.resolve_file("/etc/passwd").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Programs built-in command probes may run.
    pub commands: Commands,
    /// Directories whose files (at any depth, after symbolic links are
    /// resolved) built-in file readers may read. Empty: no file.
    pub file_roots: Vec<PathBuf>,
    /// Whether a tmux `socket_name` may be a path (`-S`) instead of a
    /// name (`-L`, a socket in tmux's own per-user directory).
    pub tmux_socket_paths: bool,
}

/// Why a reach was refused, in words an agent can act on. Displayed as
/// the message alone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

impl Grants {
    /// Grants nothing: no program, no file, tmux sockets by name only.
    pub fn none() -> Self {
        Self::default()
    }

    /// Grants everything the process itself can do: for a user at their
    /// own shell (the `waitfor` command), never for an agent's arguments.
    /// The file roots are `/` on Unix, and on Windows every drive letter
    /// present when the grants are made (a UNC share must be added as a
    /// root of its own).
    ///
    /// ```
    /// let all = waitfor::grants::Grants::all();
    /// assert!(all.check_command(&["sh".to_string()]).is_ok());
    /// ```
    pub fn all() -> Self {
        Self {
            commands: Commands::Any,
            file_roots: os::filesystem_roots(),
            tmux_socket_paths: true,
        }
    }

    /// Sets which programs may run.
    pub fn commands(mut self, commands: Commands) -> Self {
        self.commands = commands;
        self
    }

    /// Adds a directory whose files may be read. It is resolved (symbolic
    /// links followed) when checked, so it may be created later.
    pub fn file_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.file_roots.push(root.into());
        self
    }

    /// Sets whether a tmux socket name may hold path parts (`/`, `..`),
    /// which reach sockets outside tmux's own per-user directory.
    pub fn tmux_socket_paths(mut self, allowed: bool) -> Self {
        self.tmux_socket_paths = allowed;
        self
    }

    /// Reads grants from JSON, as bindings and the C ABI take them:
    /// `{"commands": "none" | "any" | ["prog", ...], "file_roots": ["dir",
    /// ...], "tmux_socket_paths": bool}`, every field optional (absent:
    /// nothing granted). An unknown field or a wrong type is an error that
    /// names the field under `field`.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// let json = serde_json::json!({"commands": ["kubectl"], "file_roots": ["/var/log"]});
    /// let grants = Grants::from_json(&json, "grants").unwrap();
    /// assert_eq!(grants.commands, Commands::Only(vec!["kubectl".into()]));
    /// assert!(Grants::from_json(&serde_json::json!({"commands": "all"}), "grants").is_err());
    /// ```
    pub fn from_json(value: &serde_json::Value, field: &str) -> Result<Self, SpecError> {
        Self::from_json_named(value, field, Self::SNAKE_CASE)
    }

    /// The JSON names of `commands`, `file_roots` and `tmux_socket_paths`
    /// as core, Python and C spell them.
    pub const SNAKE_CASE: [&'static str; 3] = ["commands", "file_roots", "tmux_socket_paths"];

    /// The same names as JavaScript spells them.
    pub const CAMEL_CASE: [&'static str; 3] = ["commands", "fileRoots", "tmuxSocketPaths"];

    /// [`Grants::from_json`] with the fields named `names` (in the order of
    /// [`Grants::SNAKE_CASE`]), which the errors name too.
    ///
    /// ```
    /// use waitfor::grants::Grants;
    /// let json = serde_json::json!({"fileRoots": ["/var/log"]});
    /// let grants = Grants::from_json_named(&json, "options.grants", Grants::CAMEL_CASE).unwrap();
    /// assert_eq!(grants.file_roots, [std::path::PathBuf::from("/var/log")]);
    /// let bad = serde_json::json!({"file_roots": []});
    /// let err = Grants::from_json_named(&bad, "options.grants", Grants::CAMEL_CASE).unwrap_err();
    /// assert_eq!(err.field, "options.grants.file_roots");
    /// ```
    pub fn from_json_named(
        value: &serde_json::Value,
        field: &str,
        names: [&str; 3],
    ) -> Result<Self, SpecError> {
        use serde_json::Value;
        let at = |name: &str| format!("{field}.{name}");
        // The message after the field, which the error's text puts first.
        let wrong = |name: &str, what: &str| {
            SpecError::new(at(name), Rule::WrongType, format!("must be {what}"))
        };
        let object = value
            .as_object()
            .ok_or_else(|| SpecError::new(field, Rule::WrongType, "must be an object"))?;
        let mut grants = Self::none();
        for (name, value) in object {
            match name.as_str() {
                name if name == names[0] => {
                    const WHAT: &str = "\"none\", \"any\" or a list of program names";
                    grants.commands = match value {
                        Value::String(s) if s == "none" => Commands::None,
                        Value::String(s) if s == "any" => Commands::Any,
                        // An empty list grants no program, said as such.
                        Value::Array(items) if items.is_empty() => Commands::None,
                        Value::Array(items) => Commands::Only(
                            items
                                .iter()
                                .map(|item| {
                                    item.as_str().filter(|s| !s.is_empty()).map(str::to_string)
                                })
                                .collect::<Option<_>>()
                                .ok_or_else(|| wrong(name, WHAT))?,
                        ),
                        _ => return Err(wrong(name, WHAT)),
                    }
                }
                name if name == names[1] => {
                    grants.file_roots = value
                        .as_array()
                        .and_then(|items| {
                            items
                                .iter()
                                .map(|item| {
                                    item.as_str().filter(|s| !s.is_empty()).map(PathBuf::from)
                                })
                                .collect::<Option<_>>()
                        })
                        .ok_or_else(|| wrong(name, "a list of directory paths"))?;
                }
                name if name == names[2] => {
                    grants.tmux_socket_paths = value
                        .as_bool()
                        .ok_or_else(|| wrong(name, "true or false"))?;
                }
                other => {
                    let [commands, file_roots, tmux] = names;
                    return Err(SpecError::unknown_field(
                        at(other),
                        &format!("grants take {commands}, {file_roots} and {tmux}"),
                    ));
                }
            }
        }
        Ok(grants)
    }

    /// The grants as JSON that [`Grants::from_json`] reads back.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// let grants = Grants::none().commands(Commands::Only(vec!["make".into()])).file_root("/src");
    /// assert_eq!(Grants::from_json(&grants.to_json(), "grants").unwrap(), grants);
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let commands = match &self.commands {
            Commands::None => serde_json::json!("none"),
            Commands::Any => serde_json::json!("any"),
            Commands::Only(programs) => serde_json::json!(programs),
        };
        let roots: Vec<_> = self
            .file_roots
            .iter()
            .map(|r| r.to_string_lossy())
            .collect();
        serde_json::json!({"commands": commands, "file_roots": roots,
            "tmux_socket_paths": self.tmux_socket_paths})
    }

    /// Checks that `argv` may run.
    pub fn check_command(&self, argv: &[String]) -> Result<(), Refused> {
        let program = argv.first().map(String::as_str).unwrap_or("");
        match &self.commands {
            Commands::Any => Ok(()),
            Commands::None => Err(Refused(
                "the host grants no commands: built-in command probes are off".into(),
            )),
            Commands::Only(allowed) if allowed.iter().any(|a| a == program) => Ok(()),
            Commands::Only(allowed) => Err(Refused(format!(
                "the host does not let waits run `{program}`; it allows: {}",
                allowed.join(", ")
            ))),
        }
    }

    /// Checks that a command may run in `cwd`, and returns the directory
    /// to run it in, its links resolved. Anywhere when any program may run
    /// (a shell changes directory itself); otherwise only in a directory
    /// that exists inside the file roots, because the directory chooses
    /// what a granted program does: which `./run.sh` a relative name runs,
    /// which repository's hooks `git` obeys.
    ///
    /// The check holds for the moment it is made; a path can be renamed or
    /// linked elsewhere later. So each run opens the directory again and
    /// checks the open directory itself ([`Grants::open_command_dir`],
    /// Unix). A `cwd` that does not exist yet is refused here rather than
    /// judged when it appears: the command could not run in it anyway.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// let git = Grants::none().commands(Commands::Only(vec!["git".into()]));
    /// assert!(git.resolve_command_dir("/tmp").is_err());
    /// let tmp = std::env::temp_dir();
    /// let git = git.file_root(&tmp);
    /// assert!(git.resolve_command_dir(tmp.to_str().unwrap()).is_ok());
    /// let later = tmp.join("waitfor-doc-no-such-dir");
    /// assert!(git.resolve_command_dir(later.to_str().unwrap()).is_err());
    /// ```
    pub fn resolve_command_dir(&self, cwd: &str) -> Result<PathBuf, Refused> {
        if self.commands == Commands::Any {
            return Ok(PathBuf::from(cwd));
        }
        let resolved = self.resolve_file(cwd).map_err(|_| {
            Refused(format!(
                "the host lets commands run only in the directories it lets waits read, \
                 and {cwd} is not one of them; leave cwd out to run in the host's own directory"
            ))
        })?;
        // Told only inside the roots: it says nothing about outside paths.
        if !resolved.is_dir() {
            return Err(Refused(format!(
                "{cwd} is not a directory (it does not exist, or is a file): a command's cwd \
                 must be a directory that exists inside the roots when the wait starts"
            )));
        }
        Ok(resolved)
    }

    /// Opens `dir`, a directory [`Grants::resolve_command_dir`] returned,
    /// for a command to run in (see [`crate::process::RunOptions::cwd_dir`]),
    /// and checks the directory opened, by its real path read back from the
    /// kernel as [`Grants::open_file`] does, so that one renamed away and
    /// replaced by a link out of the roots since the check is refused, not
    /// run in. Unix only. Other Unix systems than Linux and macOS check the
    /// path just before the open, and the command still runs in the
    /// directory opened.
    ///
    /// ```
    /// use waitfor::grants::{Commands, Grants};
    /// let tmp = std::env::temp_dir();
    /// let grants = Grants::none().commands(Commands::Only(vec!["pwd".into()])).file_root(&tmp);
    /// assert!(grants.open_command_dir(&tmp).is_ok());
    /// assert!(grants.open_command_dir(std::path::Path::new("/etc")).is_err());
    /// ```
    #[cfg(unix)]
    pub fn open_command_dir(&self, dir: &Path) -> Result<std::os::fd::OwnedFd, Refused> {
        let refused = || {
            Refused(format!(
                "the host lets commands run only in the directories it lets waits read, \
                 and {} is no longer one of them",
                dir.display()
            ))
        };
        let resolved = self.resolve_file(dir).map_err(|_| refused())?;
        let opened = os::open_dir(&resolved).map_err(|e| {
            Refused(format!(
                "cannot open the command's directory {}: {e}",
                dir.display()
            ))
        })?;
        match os::opened_path(&opened) {
            Some(real) if !self.inside_roots(&real) => Err(refused()),
            _ => Ok(opened.into()),
        }
    }

    /// Checks a tmux socket name an agent gave in `field`, as every tool
    /// that reaches tmux does: no NUL, at most
    /// [`crate::limits::MAX_SOCKET_NAME_BYTES`], and a plain name unless the host
    /// allows paths (rule `not_granted`, see
    /// [`Grants::check_tmux_socket_name`]).
    ///
    /// ```
    /// let refused = waitfor::grants::Grants::none()
    ///     .check_tmux_socket("socket_name", "/tmp/x.sock")
    ///     .unwrap_err();
    /// assert_eq!((refused.field.as_str(), refused.rule), ("socket_name", waitfor::Rule::NotGranted));
    /// ```
    pub fn check_tmux_socket(&self, field: &str, name: &str) -> Result<(), SpecError> {
        SpecError::check_socket_name(field, name)?;
        self.check_tmux_socket_name(name)
            .map_err(|r| SpecError::new(field, Rule::NotGranted, r.0))
    }

    /// Checks a host's record of keys it sent to a tmux pane, as every
    /// door's `record_send_keys` does before recording: the socket as
    /// [`Grants::check_tmux_socket`] checks an agent's, then the pane id
    /// ([`crate::tmux::parse_pane_id`], rule `invalid_pane_id`). `fields` are
    /// the names the door gives the socket name and the pane id.
    ///
    /// ```
    /// use waitfor::{grants::Grants, Rule};
    /// let fields = ["socket_name", "pane_id"];
    /// assert!(Grants::none().check_send_keys(Some("work"), "%2", fields).is_ok());
    /// let err = Grants::none().check_send_keys(None, "2", fields).unwrap_err();
    /// assert_eq!((err.field.as_str(), err.rule), ("pane_id", Rule::InvalidPaneId));
    /// ```
    pub fn check_send_keys(
        &self,
        socket_name: Option<&str>,
        pane_id: &str,
        [socket_field, pane_field]: [&str; 2],
    ) -> Result<(), SpecError> {
        if let Some(name) = socket_name {
            self.check_tmux_socket(socket_field, name)?;
        }
        crate::pane_id::parse_pane_id(pane_id, pane_field).map(drop)
    }

    /// Checks that `name` may name a tmux socket: a plain name unless the
    /// host allows paths. An empty name is the default socket (as none
    /// is, and as libtmux takes it).
    ///
    /// ```
    /// let grants = waitfor::grants::Grants::none();
    /// assert!(grants.check_tmux_socket_name("work").is_ok());
    /// assert!(grants.check_tmux_socket_name("").is_ok());
    /// assert!(grants.check_tmux_socket_name("../../x.sock").is_err());
    /// let nul = grants.check_tmux_socket_name("a\0b").unwrap_err();
    /// assert!(nul.0.contains("NUL"));
    /// ```
    pub fn check_tmux_socket_name(&self, name: &str) -> Result<(), Refused> {
        if name.contains('\0') {
            return Err(Refused(format!(
                "socket_name {} contains a NUL byte, which no socket name or path can hold",
                crate::error::echo(name)
            )));
        }
        let plain = name != "." && name != ".." && !name.contains(['/', '\\']);
        if plain || self.tmux_socket_paths {
            Ok(())
        } else {
            Err(Refused(format!(
                "socket_name {} must be a socket name, not a path: the host does not allow socket paths",
                crate::error::echo(name)
            )))
        }
    }

    /// Resolves `path` (symbolic links followed, as far as it exists) and
    /// checks that it lies inside a granted root. A path that does not
    /// exist yet is checked through its deepest existing ancestor. The
    /// refusal is the same whether or not the path exists, so it tells
    /// nothing about files outside the roots. A path written inside a root
    /// that cannot be resolved (its links loop) is refused saying so.
    pub fn resolve_file(&self, path: impl AsRef<Path>) -> Result<PathBuf, Refused> {
        let path = path.as_ref();
        if self.file_roots.is_empty() {
            return Err(Refused(
                "the host grants no file access: built-in file reads are off".into(),
            ));
        }
        // Resolving looks up each leading part of a path that does not
        // exist: time that grows with the square of its length (a 1 MB
        // path took 43 s), for a path no system call would take anyway.
        let bytes = path.as_os_str().len();
        if bytes > MAX_PATH_BYTES {
            return Err(Refused(format!(
                "{} is {bytes} bytes long, more than the {MAX_PATH_BYTES} a path may be",
                crate::error::shown_path(path)
            )));
        }
        let resolved = match resolve(path) {
            Some(resolved) => resolved,
            // Said as such only for a path written inside a root, so the
            // answer tells nothing about what lies outside them.
            None if self.resolves_inside_roots_as_far_as_it_resolves(path) => {
                return Err(unresolvable(path))
            }
            None => return Err(outside(path)),
        };
        if self.inside_roots(&resolved) {
            Ok(resolved)
        } else {
            Err(outside(path))
        }
    }

    /// Opens `path` for reading if it is a regular file inside a granted
    /// root. The open never blocks on a FIFO, and what is not a regular
    /// file (a directory, FIFO, device or socket, where a read could block
    /// or never end) is refused with its kind (`InvalidInput`). A path
    /// outside the roots is `PermissionDenied`; a missing file inside them
    /// is `NotFound`. The file's own resolved path is checked again after
    /// the open, so a link swapped in between cannot lead outside.
    ///
    /// ```
    /// use waitfor::grants::Grants;
    /// let dir = std::env::temp_dir().join(format!("grants-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// std::fs::write(dir.join("log"), "hi").unwrap();
    /// let grants = Grants::none().file_root(&dir);
    /// assert!(grants.open_file(dir.join("log")).is_ok());
    /// let err = grants.open_file(&dir).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    /// assert_eq!(grants.open_file("/etc/hostname").unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn open_file(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let path = path.as_ref();
        let denied = |r: Refused| io::Error::new(io::ErrorKind::PermissionDenied, r.0);
        let resolved = self.resolve_file(path).map_err(denied)?;
        // What is not a regular file is refused before it is opened, where
        // it can be told: opening a FIFO lets its writer, blocked in its own
        // open, go on to find no reader, and a device may act on an open.
        // (One swapped in after this look is refused after the open.)
        if let Ok(kind) = std::fs::metadata(&resolved).map(|m| m.file_type()) {
            if !kind.is_file() {
                return Err(not_regular(path, kind_name(&kind)));
            }
        }
        let file = match os::open_nonblocking(&resolved) {
            // Windows opens no directory for reading: refused as one.
            Err(e) if e.kind() == io::ErrorKind::IsADirectory => {
                return Err(not_regular(path, "a directory"))
            }
            opened => opened?,
        };
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            return Err(not_regular(path, kind_name(&kind)));
        }
        // Resolving drops a trailing slash, which the system would refuse
        // for a file: the path would then name the file and its parent
        // directory's entry at once, and a follower comparing the two
        // would take the file for replaced on every read.
        if names_a_directory(path) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} ends in a slash, which names a directory, but it is a file",
                    path.display()
                ),
            ));
        }
        match os::opened_path(&file) {
            Some(real) if !self.inside_roots(&real) => Err(denied(outside(path))),
            _ => Ok(file),
        }
    }

    fn inside_roots(&self, resolved: &Path) -> bool {
        self.file_roots
            .iter()
            .any(|root| std::fs::canonicalize(root).is_ok_and(|root| resolved.starts_with(root)))
    }

    /// Whether the longest leading part of `path` that resolves (its links
    /// followed) lies inside a granted root: what fails to resolve after it
    /// is then the roots' own affair. Not the path as written: through a
    /// link in a root that leads out, which answer came back would tell
    /// whether a directory outside exists (`root/out/d/..` resolves,
    /// `root/out/none/..` does not).
    fn resolves_inside_roots_as_far_as_it_resolves(&self, path: &Path) -> bool {
        let Ok(absolute) = std::path::absolute(path) else {
            return false;
        };
        absolute
            .ancestors()
            .find_map(|part| std::fs::canonicalize(part).ok())
            .is_some_and(|real| self.inside_roots(&real))
    }
}

/// The longest path [`Grants::resolve_file`] takes: the most a Linux
/// system call takes (`PATH_MAX`); Windows' long paths on Windows.
#[cfg(not(windows))]
const MAX_PATH_BYTES: usize = 4096;
#[cfg(windows)]
const MAX_PATH_BYTES: usize = 32_767;

fn unresolvable(path: &Path) -> Refused {
    Refused(format!(
        "{} cannot be resolved: its links loop, or `..` follows a part that does not exist",
        crate::error::shown_path(path)
    ))
}

fn outside(path: &Path) -> Refused {
    Refused(format!(
        "{} is outside the directories the host lets waits read",
        crate::error::shown_path(path)
    ))
}

/// The absolute form of `path` with every existing part's links resolved,
/// a link whose target does not exist (yet) included, so that such a link
/// is judged by where it points, as a link to an existing file is: the
/// answer never tells whether a path outside the roots exists. `None`
/// when a part that does not exist is followed by `..` (which could lead
/// anywhere once it exists) or links loop.
fn resolve(path: &Path) -> Option<PathBuf> {
    resolve_within(std::path::absolute(path).ok()?, 40)
}

fn resolve_within(absolute: PathBuf, hops: u32) -> Option<PathBuf> {
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return Some(real);
    }
    let mut existing = absolute.as_path();
    let mut missing: Vec<&OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut resolved = real;
            resolved.extend(missing.iter().rev());
            return Some(resolved);
        }
        if let Ok(target) = std::fs::read_link(existing) {
            // A dangling link: follow it by hand.
            let mut followed = existing.parent()?.join(target);
            followed.extend(missing.iter().rev());
            return resolve_within(followed, hops.checked_sub(1)?);
        }
        match existing.components().next_back()? {
            Component::Normal(part) => missing.push(part),
            Component::CurDir => {}
            _ => return None,
        }
        existing = existing.parent()?;
    }
}

fn not_regular(path: &Path, kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {kind}, not a regular file: reading it could block or never end",
            path.display()
        ),
    )
}

/// Whether `path`, as written, can only name a directory: it ends in a
/// separator or in a `.` after one.
fn names_a_directory(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    let trimmed = bytes.strip_suffix(b".").unwrap_or(bytes);
    trimmed
        .last()
        .is_some_and(|&b| std::path::is_separator(char::from(b)))
}

fn kind_name(kind: &std::fs::FileType) -> &'static str {
    if let Some(special) = os::special_kind(kind) {
        special
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// An empty directory of the test's own, removed when dropped.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("waitfor-grants-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[test]
    fn nothing_is_granted_by_default() {
        let grants = Grants::default();
        assert!(grants.check_command(&["true".into()]).is_err());
        assert!(grants.resolve_file("/tmp/x").is_err());
        assert!(grants.check_tmux_socket_name("name").is_ok());
        assert!(grants
            .check_tmux_socket_name("/tmp/tmux-0/default")
            .is_err());
    }

    #[test]
    fn links_that_loop_are_said_to_loop_inside_the_roots_only() {
        let (inside, outside_dir) = (scratch("loop-in"), scratch("loop-out"));
        let (inside, outside_dir) = (inside.path(), outside_dir.path());
        for dir in [&inside, &outside_dir] {
            std::os::unix::fs::symlink(dir.join("l2"), dir.join("l1")).unwrap();
            std::os::unix::fs::symlink(dir.join("l1"), dir.join("l2")).unwrap();
        }
        let grants = Grants::none().file_root(inside);
        for path in [
            inside.join("l1"),
            inside.join("l1/x"),
            inside.join("no/../l1"),
        ] {
            let Refused(why) = grants.resolve_file(&path).unwrap_err();
            assert!(why.ends_with("cannot be resolved: its links loop, or `..` follows a part that does not exist"), "{why}");
        }
        // Outside, or through a link in the root that leads out: a loop,
        // a missing directory and an existing one are all just outside.
        std::os::unix::fs::symlink(outside_dir, inside.join("out")).unwrap();
        std::fs::create_dir(outside_dir.join("d")).unwrap();
        for path in [
            outside_dir.join("l1"),
            inside.join("out/l1"),
            inside.join("out/d/.."),
            inside.join("out/none/.."),
        ] {
            let Refused(why) = grants.resolve_file(&path).unwrap_err();
            assert!(
                why.ends_with("is outside the directories the host lets waits read"),
                "{why}"
            );
        }
        let Refused(why) = Grants::all().resolve_file(inside.join("l1")).unwrap_err();
        assert!(why.contains("cannot be resolved"), "{why}");
    }

    #[test]
    fn a_path_too_long_for_the_system_is_refused_at_once_and_shown_cut() {
        let long = format!("/{}", "x/".repeat(500_000));
        let started = std::time::Instant::now();
        let Refused(why) = Grants::all().resolve_file(&long).unwrap_err();
        // Generous: resolving it part by part took 43 s.
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(why.len() < 1200, "{} bytes", why.len());
        assert!(why.contains("(cut; 1000001 bytes in all)"), "{why:.200}");
        assert!(
            why.ends_with("more than the 4096 a path may be"),
            "{why:.200}"
        );
        let Refused(why) = Grants::none()
            .check_tmux_socket_name(&"/".repeat(1 << 20))
            .unwrap_err();
        assert!(why.len() < 300, "{} bytes", why.len());
    }

    #[test]
    fn a_path_ending_in_a_slash_names_a_directory() {
        for path in ["log/", "log/.", "/var/log/", "a/b//"] {
            assert!(names_a_directory(Path::new(path)), "{path}");
        }
        for path in ["log", "log.", "/var/log", ".", "a/.b", "a/..."] {
            assert!(!names_a_directory(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn grants_read_from_json_name_the_bad_field() {
        let json = serde_json::json!({"commands": "any", "file_roots": ["/tmp"], "tmux_socket_paths": true});
        let grants = Grants::from_json(&json, "grants").unwrap();
        assert_eq!(grants.commands, Commands::Any);
        assert_eq!(grants.file_roots, vec![PathBuf::from("/tmp")]);
        assert!(grants.tmux_socket_paths);
        assert_eq!(
            Grants::from_json(&serde_json::json!({}), "g").unwrap(),
            Grants::none()
        );
        for (bad, field) in [
            (serde_json::json!({"commands": "all"}), "g.commands"),
            (serde_json::json!({"commands": ["sh", 1]}), "g.commands"),
            (serde_json::json!({"file_roots": "/tmp"}), "g.file_roots"),
            (
                serde_json::json!({"tmux_socket_paths": 1}),
                "g.tmux_socket_paths",
            ),
            (serde_json::json!({"files": []}), "g.files"),
            (serde_json::json!([]), "g"),
        ] {
            assert_eq!(
                Grants::from_json(&bad, "g").unwrap_err().field,
                field,
                "{bad}"
            );
        }
    }

    #[test]
    fn grants_read_in_camel_case_name_the_field_as_given() {
        let camel =
            |json: serde_json::Value| Grants::from_json_named(&json, "g", Grants::CAMEL_CASE);
        let json = serde_json::json!({"commands": ["make"], "fileRoots": ["/tmp"], "tmuxSocketPaths": true});
        let grants = camel(json).unwrap();
        assert_eq!(grants.commands, Commands::Only(vec!["make".into()]));
        assert_eq!(Grants::from_json(&grants.to_json(), "g").unwrap(), grants);
        for (bad, field) in [
            (serde_json::json!({"fileRoots": "/tmp"}), "g.fileRoots"),
            (
                serde_json::json!({"tmuxSocketPaths": "yes"}),
                "g.tmuxSocketPaths",
            ),
            (serde_json::json!({"file_roots": []}), "g.file_roots"),
        ] {
            assert_eq!(camel(bad.clone()).unwrap_err().field, field, "{bad}");
        }
        // The field once, as every error's text names it: `field: what`.
        let err = camel(serde_json::json!({"fileRoots": "/tmp"})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "g.fileRoots: must be a list of directory paths"
        );
        let err = camel(serde_json::json!([])).unwrap_err();
        assert_eq!(err.to_string(), "g: must be an object");
        let err = camel(serde_json::json!({"fileRoot": []})).unwrap_err();
        assert!(
            err.message
                .ends_with("grants take commands, fileRoots and tmuxSocketPaths"),
            "{err}"
        );
    }

    #[test]
    fn only_named_programs_run() {
        let grants = Grants::none().commands(Commands::Only(vec!["echo".into()]));
        assert!(grants.check_command(&["echo".into()]).is_ok());
        assert!(grants.check_command(&["/bin/echo".into()]).is_err());
        assert!(grants.check_command(&[]).is_err());
    }

    #[test]
    fn links_out_of_a_root_are_refused_as_outside() {
        let dir = scratch("links");
        let dir = dir.path();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("out")).unwrap();
        let grants = Grants::none().file_root(dir);
        let err = grants.open_file(dir.join("out")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(grants.resolve_file(dir.join("../x")).is_err());
        // The refusal does not depend on whether the outside file exists.
        let missing = grants.open_file("/etc/no-such-file-here").unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::PermissionDenied);
        // Nor through a link inside the root: one to a missing outside
        // path is refused as one to an outside file is, and one to a
        // missing file inside the root (a log being rotated) is not found.
        std::os::unix::fs::symlink("/etc/no-such-file-here", dir.join("dangling")).unwrap();
        let dangling = grants.open_file(dir.join("dangling")).unwrap_err();
        assert_eq!(dangling.kind(), io::ErrorKind::PermissionDenied);
        assert!(grants.resolve_file(dir.join("dangling/below")).is_err());
        std::os::unix::fs::symlink("app-2.log", dir.join("current.log")).unwrap();
        let rotating = grants.open_file(dir.join("current.log")).unwrap_err();
        assert_eq!(rotating.kind(), io::ErrorKind::NotFound);
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        assert!(grants.resolve_file(dir.join("loop")).is_err());
    }

    #[test]
    fn a_missing_file_inside_a_root_resolves_and_is_not_found() {
        let dir = scratch("missing");
        let dir = dir.path();
        let grants = Grants::none().file_root(dir);
        let real = std::fs::canonicalize(dir).unwrap();
        assert_eq!(
            grants.resolve_file(dir.join("a/b.log")),
            Ok(real.join("a/b.log"))
        );
        assert!(grants.resolve_file(dir.join("a/../../x")).is_err());
        let err = grants.open_file(dir.join("b.log")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn fifos_and_devices_are_refused_without_blocking() {
        let dir = scratch("fifo");
        let dir = dir.path();
        let fifo = dir.join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let grants = Grants::all();
        let err = grants.open_file(&fifo).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("a FIFO"), "{err}");
        let err = grants.open_file("/dev/zero").unwrap_err();
        assert!(err.to_string().contains("a device"), "{err}");
    }

    /// A FIFO is refused without being opened: an open for reading lets
    /// its writer, blocked in its own open, go on to find no reader (a
    /// broken pipe), as a device may act on being opened. The kernel tells
    /// of every open of the FIFO (inotify's `IN_OPEN`, queued by the open
    /// itself).
    #[cfg(target_os = "linux")]
    #[test]
    fn what_is_not_a_regular_file_is_refused_unopened() {
        use std::os::unix::ffi::OsStrExt;
        let dir = scratch("fifo-unopened");
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let opens = |grants: &Grants| {
            // SAFETY: plain system calls on a descriptor of our own, closed here.
            unsafe {
                let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
                assert!(fd >= 0);
                assert!(libc::inotify_add_watch(fd, c.as_ptr(), libc::IN_OPEN) >= 0);
                let err = grants.open_file(&fifo).unwrap_err();
                assert!(err.to_string().contains("a FIFO"), "{err}");
                let mut buf = [0u8; 4096];
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                libc::close(fd);
                n > 0
            }
        };
        assert!(!opens(&Grants::all()), "the refusal opened the FIFO");
        assert!(
            !opens(&Grants::none().file_root(dir.path())),
            "the refusal opened the FIFO"
        );
    }
}
