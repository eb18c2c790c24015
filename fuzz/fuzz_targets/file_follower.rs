//! The `file` probe following a real file that the input appends to,
//! truncates and rotates (and a wait resumed from the probe's token).
//! Alongside, the oracle keeps every byte appended since the first sample:
//! what the probe returns is always a prefix of it, and all of it once the
//! writer is done, nothing lost or seen twice.
//!
//! The writer appends slices of one UTF-8 text, so a slice may end inside
//! a character. Before it truncates or rotates, it finishes the character
//! and the probe takes a sample (as a writer that rotates a log does
//! between whole lines, and as a follower must look before a file goes):
//! bytes cut away before anyone could read them are not the probe's to
//! return. One more op cuts the file at any moment, inside a character or
//! before the probe looked: from then on only "no panic, no error" holds.
//! A resume token refused because its file was rotated or cut under it
//! (as it must be) also ends the byte-for-byte check.
#![no_main]

use arbitrary::Arbitrary;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use waitfor::probes::FileProbe;
use waitfor::{CancelToken, Probe, ProbeContext, ResumeToken};

#[derive(Arbitrary, Debug)]
enum Op {
    /// Appends the next this many bytes of the text (1 to 64).
    Append(u8),
    /// Takes a sample.
    Sample,
    /// Cuts the file to nothing.
    Truncate,
    /// Cuts the file to nothing at once, without the guards above.
    CutUnseen,
    /// Moves the file away; the new one is made now or by the next append.
    Rotate { create_now: bool },
    /// Ends this wait and starts the next from its resume token.
    Resume,
}

#[derive(Arbitrary, Debug)]
struct Input {
    /// What the file holds before the wait (nothing: no file yet).
    before: Option<Vec<u8>>,
    text: String,
    ops: Vec<Op>,
}

struct Run<'a> {
    path: PathBuf,
    text: &'a str,
    /// Bytes of `text` written so far.
    written: usize,
    /// What the probe returned, in order.
    returned: String,
    /// Whether `returned` is still checked against what was written.
    checked: bool,
    probe: FileProbe,
    samples: u64,
}

impl Run<'_> {
    fn sample(&mut self) {
        self.samples += 1;
        let ctx = ProbeContext {
            sample: self.samples,
            elapsed: Duration::from_millis(self.samples * 100),
            budget: Duration::from_secs(10),
            cancel: CancelToken::new(),
            output_cap: 1 << 20,
        };
        let observation = match self.probe.sample(&ctx) {
            Ok(observation) => observation,
            // A token whose file was rotated or cut below its position is
            // refused, never replayed: the agent waits again without it,
            // from the end, so what it returned is no longer checked.
            Err(e) if e.message.contains("does not fit") => {
                self.probe = FileProbe::new(&self.path);
                self.checked = false;
                return;
            }
            Err(e) => panic!("the probe reads the scratch file: {e:?}"),
        };
        self.returned.push_str(&observation.text);
        if !self.checked {
            return;
        }
        let expected = &self.text.as_bytes()[..self.written];
        assert!(
            expected.starts_with(self.returned.as_bytes()),
            "returned {:?}, but only {:?} was appended",
            self.returned,
            String::from_utf8_lossy(expected)
        );
    }

    fn append(&mut self, n: usize) {
        let end = (self.written + n).min(self.text.len());
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .expect("the scratch file opens");
        file.write_all(&self.text.as_bytes()[self.written..end])
            .expect("the scratch file takes bytes");
        self.written = end;
    }

    /// Finishes the character the last append cut, then lets the probe
    /// see everything.
    fn settle(&mut self) {
        let mut end = self.written;
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        self.append(end - self.written);
        self.sample();
    }
}

fn fresh_path() -> PathBuf {
    let dir = waitfor_fuzz::scratch_dir().join("follow");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the scratch dir can be made");
    dir.join("app.log")
}

fn rotate(path: &Path, create_now: bool) {
    std::fs::rename(path, path.with_extension("log.1")).expect("the log can be moved");
    if create_now {
        File::create(path).expect("a new log can be made");
    }
}

libfuzzer_sys::fuzz_target!(|input: Input| {
    let path = fresh_path();
    if let Some(before) = &input.before {
        std::fs::write(&path, before).expect("the scratch file can be written");
    }
    let mut run = Run {
        probe: FileProbe::new(&path),
        path,
        text: &input.text,
        written: 0,
        returned: String::new(),
        checked: true,
        samples: 0,
    };
    // A wait samples at once: what is there now is not new.
    run.sample();
    for op in &input.ops {
        match op {
            Op::Append(n) => run.append(usize::from(*n % 64) + 1),
            Op::Sample => run.sample(),
            Op::Truncate => {
                run.settle();
                if run.path.exists() {
                    File::create(&run.path).expect("the log can be cut");
                }
                run.sample();
            }
            Op::CutUnseen => {
                if run.path.exists() {
                    File::create(&run.path).expect("the log can be cut");
                }
                run.checked = false;
            }
            Op::Rotate { create_now } => {
                run.settle();
                if run.path.exists() {
                    rotate(&run.path, *create_now);
                }
            }
            Op::Resume => {
                let Some(token) = run.probe.resume_point() else {
                    continue;
                };
                let token =
                    ResumeToken::decode(&token.encode()).expect("a token survives its text");
                run.probe = FileProbe::new(&run.path).resume_from(&token);
            }
        }
    }
    run.settle();
    run.sample();
    if run.checked {
        assert_eq!(run.returned, run.text[..run.written]);
    }
});
