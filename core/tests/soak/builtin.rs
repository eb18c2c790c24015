//! Built-in probes under fault: files replaced and truncated under a
//! `file` wait, tmux servers killed under a pane wait, commands that
//! answer, hang or flood.

use crate::rng::Rng;
use crate::support::Server;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use waitfor::grants::{Commands, Grants};
use waitfor::tmux::PaneTarget;
use waitfor::{CancelToken, Condition, Pattern, Policy, ProbeSpec, Spec, ViewKind};

/// A `file` wait's target: a log in its own granted directory.
pub struct FileTarget {
    pub dir: PathBuf,
    pub path: PathBuf,
    pub mark: String,
}

impl FileTarget {
    pub fn new(root: &Path, index: usize) -> Self {
        let dir = root.join(format!("file-{index}"));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("app.log");
        std::fs::write(&path, "starting\n").unwrap();
        Self {
            dir,
            path,
            mark: format!("soak mark {index}"),
        }
    }

    pub fn spec(&self, max_wait: Duration) -> Spec {
        let path = self.path.to_string_lossy().into_owned();
        Spec::new(Condition::Matches(Pattern::literal(&self.mark)))
            .probe(ProbeSpec::File { path })
            .view(ViewKind::Fresh)
            .interval(Duration::from_millis(20))
            .max_wait(max_wait)
    }

    pub fn policy(&self) -> Policy {
        Policy::default().grants(Grants::none().file_root(&self.dir))
    }

    /// Appends, truncates, replaces (rename over) and removes the file
    /// under the wait, then appends the mark until `ended` says the wait
    /// is over (or `give_up` passes): a follower that copes with each of
    /// these sees the mark.
    pub fn churn(
        self,
        seed: u64,
        give_up: Instant,
        ended: impl Fn() -> bool + Send + 'static,
    ) -> JoinHandle<()> {
        std::thread::spawn(move || {
            let mut rng = Rng::new(seed);
            for step in 0..8 + rng.below(8) {
                std::thread::sleep(rng.millis(5, 60));
                match rng.below(4) {
                    0 => self.append(&format!("noise {step}\n")),
                    1 => drop(std::fs::File::create(&self.path)),
                    2 => {
                        let fresh = self.dir.join("app.log.new");
                        std::fs::write(&fresh, format!("rotated {step}\n")).unwrap();
                        std::fs::rename(&fresh, &self.path).unwrap();
                    }
                    _ => {
                        let _ = std::fs::remove_file(&self.path);
                        std::thread::sleep(rng.millis(5, 30));
                        self.append(&format!("recreated {step}\n"));
                    }
                }
            }
            while !ended() && Instant::now() < give_up {
                self.append(&format!("{}\n", self.mark));
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    }

    fn append(&self, line: &str) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .unwrap();
    }
}

/// A pane wait on a private tmux server.
pub fn tmux_spec(server: &Server, max_wait: Duration) -> Spec {
    let pane = PaneTarget {
        pane_id: Some(server.pane.clone()),
        ..Default::default()
    };
    Spec::new(Condition::Matches(Pattern::literal("soak: never printed")))
        .probe(ProbeSpec::Tmux {
            pane,
            socket_name: server.name.clone(),
            push: true,
            pick: Default::default(),
            freshness: Default::default(),
        })
        .interval(Duration::from_millis(50))
        .max_wait(max_wait)
}

/// Kills the server after `delay`, mid-wait.
pub fn kill_later(server: Server, delay: Duration) -> JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let budget = Duration::from_secs(5);
        let _ = server
            .tmux
            .run(&["kill-server"], budget, &CancelToken::new());
    })
}

/// What a built-in command probe runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Prints `ready` and exits.
    Echo,
    /// Outlives the wait (killed when its call is abandoned).
    Sleep,
    /// Prints about 2 MB, far over the output cap.
    Flood,
}

pub fn command_spec(kind: CommandKind, max_wait: Duration) -> Spec {
    let argv: &[&str] = match kind {
        CommandKind::Echo => &["sh", "-c", "echo ready"],
        CommandKind::Sleep => &["sleep", "30"],
        CommandKind::Flood => &["seq", "1", "300000"],
    };
    Spec::new(Condition::Matches(Pattern::literal("ready")))
        .probe(ProbeSpec::Command {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            cwd: None,
            stderr: true,
        })
        .interval(Duration::from_millis(50))
        .max_wait(max_wait)
}

pub fn command_policy() -> Policy {
    Policy::default().grants(Grants::none().commands(Commands::Any))
}
