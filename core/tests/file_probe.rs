//! The `file` probe on real files: appended bytes only, truncation,
//! rotation, a file created late, partial lines, resume.

use std::fs;
use std::time::Duration;
use waitfor::grants::Grants;
use waitfor::probes::FileProbe;
use waitfor::{CancelToken, Engine, Outcome, Policy, Probe, ProbeContext, Spec, WaitOptions};

mod files;
use files::{append, temp_dir};

fn ctx() -> ProbeContext {
    ProbeContext {
        sample: 1,
        elapsed: Duration::ZERO,
        budget: Duration::from_secs(5),
        cancel: CancelToken::new(),
        output_cap: 1 << 20,
    }
}

fn read(probe: &mut FileProbe) -> String {
    probe.sample(&ctx()).unwrap().text
}

#[test]
fn only_bytes_appended_after_the_first_call_count() {
    let dir = temp_dir("file-append");
    let path = dir.join("log");
    append(&path, b"old ready\n");
    let mut probe = FileProbe::new(&path);
    assert_eq!(read(&mut probe), "");
    append(&path, b"new line\n");
    assert_eq!(read(&mut probe), "new line\n");
    assert_eq!(read(&mut probe), "");
}

#[test]
fn bytes_that_are_not_utf8_count_as_read_against_the_cap() {
    let dir = temp_dir("file-not-utf8");
    let path = dir.join("log");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, &[0xff; 1000]);
    let obs = probe.sample(&ctx()).unwrap();
    assert_eq!((obs.text.len(), obs.len_read()), (3000, 1000));
}

#[test]
fn a_file_created_late_is_all_new() {
    let dir = temp_dir("file-late");
    let path = dir.join("log");
    let mut probe = FileProbe::new(&path);
    assert_eq!(read(&mut probe), "");
    append(&path, b"first\n");
    assert_eq!(read(&mut probe), "first\n");
}

#[test]
fn truncation_starts_again_at_the_start() {
    let dir = temp_dir("file-truncate");
    let path = dir.join("log");
    append(&path, b"aaaaaaaaaa\n");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, b"b\n");
    assert_eq!(read(&mut probe), "b\n");
    fs::write(&path, b"c\n").unwrap();
    assert_eq!(read(&mut probe), "c\n");
}

#[test]
fn rotation_drains_the_old_file_then_follows_the_new_one() {
    let dir = temp_dir("file-rotate");
    let path = dir.join("log");
    append(&path, b"before\n");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, b"one\n");
    let rotated = dir.join("log.1");
    fs::rename(&path, &rotated).unwrap();
    append(&rotated, b"tail of old\n");
    append(&path, b"start of new\n");
    assert_eq!(read(&mut probe), "one\ntail of old\nstart of new\n");
    append(&path, b"more\n");
    assert_eq!(read(&mut probe), "more\n");
}

#[test]
fn a_last_line_without_newline_and_a_split_character() {
    let dir = temp_dir("file-partial");
    let path = dir.join("log");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, b"abc");
    assert_eq!(read(&mut probe), "abc");
    append(&path, "def é".as_bytes().split_last().unwrap().1);
    assert_eq!(read(&mut probe), "def ");
    append(&path, &"é".as_bytes()[1..]);
    append(&path, b"\n");
    assert_eq!(read(&mut probe), "é\n");
}

#[test]
fn a_resumed_probe_continues_where_the_last_one_stopped() {
    let dir = temp_dir("file-resume");
    let path = dir.join("log");
    append(&path, b"x\n");
    let mut first = FileProbe::new(&path);
    read(&mut first);
    append(&path, b"seen\n");
    assert_eq!(read(&mut first), "seen\n");
    let token = first.resume_point().unwrap();
    append(&path, b"written between waits\n");
    let mut second = FileProbe::new(&path).resume_from(&token);
    assert_eq!(read(&mut second), "written between waits\n");
}

#[test]
fn engine_wait_on_a_file_and_resume_across_waits() {
    let dir = temp_dir("file-engine");
    let path = dir.join("build.log");
    append(&path, b"ready from a previous run\n");
    let spec = |extra: &str| {
        Spec::from_json(&format!(
            r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "view": "fresh", "until": {{"matches": "ready"}},
               "stop": ["FAILED"], "interval_ms": 10, "max_wait_ms": 200 {extra}}}"#,
            path = path.to_str().unwrap()
        ))
        .unwrap()
    };
    // Stale content never matches: the first wait times out.
    let dir = path.parent().unwrap();
    let granted =
        || WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(dir)));
    let first = Engine::global().run(spec(""), granted()).unwrap();
    assert_eq!(first.outcome, Outcome::Timeout);
    let token = first.resume.expect("a file wait can be resumed");
    // Written between the two waits: seen by the resumed one, once.
    append(&path, b"step 1\nready now\n");
    let second = Engine::global()
        .run(spec(&format!(r#", "resume": "{token}""#)), granted())
        .unwrap();
    assert_eq!(second.outcome, Outcome::Matched);
    assert_eq!(second.matched_lines, vec!["ready now"]);
}

#[test]
fn a_resume_token_of_the_other_kind_is_refused_not_ignored() {
    // Ignored, a lines token would start a file wait at the end of the file
    // and skip what was written between the two calls.
    let dir = temp_dir("file-token-kind");
    let path = dir.join("build.log");
    append(&path, b"");
    let lines = waitfor::ResumeToken::Lines {
        lines: vec!["$ make".into()],
    }
    .encode();
    let on_file = format!(
        r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "until": {{"matches": "x"}}, "resume": "{lines}"}}"#,
        path = path.to_str().unwrap()
    );
    let err = Spec::from_json(&on_file).unwrap_err();
    assert_eq!(err.rule, waitfor::Rule::InvalidResume, "{err}");
    // A file wait's token on a command wait; the wait ends at its first
    // sample, however long a loaded machine takes to make it.
    let dir = path.parent().unwrap();
    let first = Engine::global()
        .run(
            Spec::from_json(&format!(
                r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "view": "fresh", "until": {{"not_matches": "x"}}, "interval_ms": 10, "max_wait_ms": 30000}}"#,
                path = path.to_str().unwrap()
            ))
            .unwrap(),
            WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(dir))),
        )
        .unwrap();
    let token = first.resume.expect("a file wait can be resumed");
    let on_command = format!(
        r#"{{"probe": {{"command": {{"argv": ["true"]}}}}, "until": {{"matches": "x"}}, "resume": "{token}"}}"#
    );
    let err = Spec::from_json(&on_command).unwrap_err();
    assert_eq!(err.rule, waitfor::Rule::InvalidResume, "{err}");
}

#[test]
fn a_file_that_reports_no_size_is_still_read() {
    // Files in /proc say they are empty and are not: a probe that trusted
    // the size to skip reading would never see them.
    let mut probe = FileProbe::new("/proc/self/status");
    assert!(read(&mut probe).contains("Name:"));
}

#[test]
fn a_sample_with_nothing_new_reads_nothing() {
    let dir = temp_dir("file-nothing-new");
    let path = dir.join("log");
    append(&path, b"old\n");
    let mut probe = FileProbe::new(&path);
    assert_eq!(read(&mut probe), "");
    assert_eq!(read(&mut probe), "");
    append(&path, b"new\n");
    assert_eq!(read(&mut probe), "new\n");
    assert_eq!(read(&mut probe), "");
}

fn sample_error(probe: &mut FileProbe) -> String {
    match probe.sample(&ctx()) {
        Err(e) => e.message,
        Ok(o) => panic!("read {:?}", o.text),
    }
}

#[test]
fn a_split_character_then_a_truncation_loses_no_line() {
    let dir = temp_dir("file-split-truncate");
    let path = dir.join("log");
    append(&path, b"");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, b"abc");
    append(&path, &"é".as_bytes()[..1]);
    assert_eq!(read(&mut probe), "abc");
    // Cut while the start of a character is carried: it goes with the cut.
    fs::write(&path, b"").unwrap();
    assert_eq!(read(&mut probe), "");
    let token = probe.resume_point().unwrap();
    append(&path, b"one\ntwo\n");
    let mut resumed = FileProbe::new(&path).resume_from(&token);
    assert_eq!(read(&mut resumed), "one\ntwo\n");
    // The probe itself does not prepend the carried byte either.
    assert_eq!(read(&mut probe), "one\ntwo\n");
}

#[cfg(unix)]
#[test]
fn a_resume_token_shows_neither_the_offset_nor_the_file() {
    use base64::Engine as _;
    use std::os::unix::fs::MetadataExt;
    let dir = temp_dir("file-token-opaque");
    let path = dir.join("log");
    append(&path, &[b'x'; 12_345]);
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    let token = probe.resume_point().unwrap().encode();
    let body = token.strip_prefix("wf1.").unwrap();
    let json = String::from_utf8(
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .unwrap(),
    )
    .unwrap();
    let meta = fs::metadata(&path).unwrap();
    for fact in [
        12_345u64.to_string(),
        format!("{:x}", 12_345),
        meta.ino().to_string(),
        format!("{:x}", meta.ino()),
    ] {
        assert!(!json.contains(&fact), "{json} shows {fact}");
    }
    // Two tokens for the same place differ (a fresh nonce each), in their
    // file field too: tokens do not show that they are of one file.
    let again = probe.resume_point().unwrap().encode();
    assert_ne!(again, token);
    let file_field = |token: &str| {
        let body = token.strip_prefix("wf1.").unwrap();
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&json).unwrap()["file"].clone()
    };
    assert_ne!(file_field(&again), file_field(&token));
}

#[test]
fn a_token_that_does_not_fit_its_file_is_an_error_not_a_replay() {
    let dir = temp_dir("file-token-fit");
    let path = dir.join("log");
    append(&path, b"first file, long enough\n");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    let token = probe.resume_point().unwrap();

    // Another file moved into place.
    let other = dir.join("other");
    append(&other, b"another file, all of it would be replayed\n");
    fs::rename(&other, &path).unwrap();
    let mut resumed = FileProbe::new(&path).resume_from(&token);
    let err = sample_error(&mut resumed);
    assert!(err.contains("does not fit"), "{err}");
    // Every sample says so: it never falls back to replaying the file.
    assert!(sample_error(&mut resumed).contains("does not fit"));

    // The same file, shorter than the token's position.
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    let token = probe.resume_point().unwrap();
    fs::write(&path, b"short\n").unwrap();
    let err = sample_error(&mut FileProbe::new(&path).resume_from(&token));
    assert!(err.contains("does not fit"), "{err}");
}

/// A new file that gets the old one's inode (ext4 hands a freed inode to the
/// next file) has the same device and inode as the file a token was made
/// for. Rewriting the file in place is the same situation without relying
/// on the filesystem: the token must see that the bytes before its offset
/// are not the ones it was made after, instead of skipping the new start.
#[test]
fn a_token_for_a_file_rewritten_in_place_is_an_error_not_a_skip() {
    let dir = temp_dir("file-token-rewritten");
    let path = dir.join("log");
    append(&path, b"old-line-1\nold-line-2\n");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    let token = probe.resume_point().unwrap();
    let id = |path: &std::path::Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let meta = fs::metadata(path).unwrap();
            Some((meta.dev(), meta.ino()))
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None::<(u64, u64)>
        }
    };
    let before = id(&path);
    for rewritten in [
        // Larger, with a header the resumed wait would skip.
        &b"SECRET-NEW-FILE-HEADER\nnew2\n"[..],
        // The same size, one byte just before the offset differs.
        &b"old-line-1\nold-line-X\n"[..],
        // The same size, only the first byte differs.
        &b"Xld-line-1\nold-line-2\n"[..],
    ] {
        // In place (truncated and written again): the same device and inode.
        fs::write(&path, rewritten).unwrap();
        assert_eq!(id(&path), before, "not the same file any more");
        let err = sample_error(&mut FileProbe::new(&path).resume_from(&token));
        assert!(err.contains("does not fit"), "{rewritten:?}: {err}");
    }

    // The file as the token left it, then appended to: resumed exactly.
    fs::write(&path, b"old-line-1\nold-line-2\n").unwrap();
    append(&path, b"after\n");
    let mut resumed = FileProbe::new(&path).resume_from(&token);
    assert_eq!(read(&mut resumed), "after\n");
    // The token it gives covers what it read: another rewrite of the same
    // size is caught too.
    let next = resumed.resume_point().unwrap();
    fs::write(&path, b"old-line-1\nold-line-2\nAFTER\n").unwrap();
    let err = sample_error(&mut FileProbe::new(&path).resume_from(&next));
    assert!(err.contains("does not fit"), "{err}");

    // A token at offset 0 skips nothing: any bytes fit it.
    let dir = temp_dir("file-token-rewritten-empty");
    let empty = dir.join("log");
    append(&empty, b"");
    let mut probe = FileProbe::new(&empty);
    read(&mut probe);
    let at_start = probe.resume_point().unwrap();
    fs::write(&empty, b"written after the token\n").unwrap();
    let mut resumed = FileProbe::new(&empty).resume_from(&at_start);
    assert_eq!(read(&mut resumed), "written after the token\n");
}

/// The bytes a token covers are those the probe read, up to the offset the
/// token names: a partial character carried to the next read is not among
/// them, and more than the last 64 bytes are not needed.
#[test]
fn a_token_covers_the_bytes_before_its_offset_as_they_were_read() {
    let dir = temp_dir("file-token-window");
    let path = dir.join("log");
    append(&path, b"");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    let long: Vec<u8> = (0..200u8).map(|i| b'a' + i % 26).collect();
    append(&path, &long);
    append(&path, &"é".as_bytes()[..1]);
    read(&mut probe);
    // Sealed before the carried byte: resumed, the character is whole.
    let token = probe.resume_point().unwrap();
    append(&path, &"é".as_bytes()[1..]);
    let mut resumed = FileProbe::new(&path).resume_from(&token);
    assert_eq!(read(&mut resumed), "é");
    // A byte changed just before the offset: refused.
    let mut bytes = fs::read(&path).unwrap();
    bytes[199] = b'!';
    fs::write(&path, &bytes).unwrap();
    let err = sample_error(&mut FileProbe::new(&path).resume_from(&token));
    assert!(err.contains("does not fit"), "{err}");
}

/// The same through the engine, as `resume_reuse` showed it: the resumed
/// wait ends with `probe_error` at once instead of reading past the new
/// file's first line.
#[test]
fn engine_refuses_a_token_for_a_rewritten_file() {
    let dir = temp_dir("file-token-rewritten-engine");
    let path = dir.join("a.log");
    append(&path, b"old-line-1\nold-line-2\n");
    let spec = |extra: &str| {
        Spec::from_json(&format!(
            r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "view": "fresh", "until": {{"matches": "NEVER"}},
               "interval_ms": 10, "max_wait_ms": 150 {extra}}}"#,
            path = path.to_str().unwrap()
        ))
        .unwrap()
    };
    let granted =
        || WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(&dir)));
    let first = Engine::global().run(spec(""), granted()).unwrap();
    let token = first.resume.expect("a file wait can be resumed");
    fs::write(&path, b"SECRET-NEW-FILE-HEADER\nnew2\n").unwrap();
    let second = Engine::global()
        .run(spec(&format!(r#", "resume": "{token}""#)), granted())
        .unwrap();
    assert_eq!(second.outcome, Outcome::ProbeError, "{second:?}");
    assert!(
        second
            .error
            .as_deref()
            .unwrap_or("")
            .contains("does not fit"),
        "{second:?}"
    );
    assert!(!second.saw_new_output, "{second:?}");
}

#[test]
fn a_forged_or_old_token_is_refused_before_the_wait() {
    use base64::Engine as _;
    let dir = temp_dir("file-token-forged");
    let path = dir.join("log");
    append(&path, b"x\n");
    let encode = |json: &str| {
        format!(
            "wf1.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
        )
    };
    for forged in [
        encode(r#"{"kind":"file","dev":1,"ino":2,"offset":0}"#),
        encode(r#"{"kind":"file","nonce":"00","at":"00","file":"00","tag":"00"}"#),
    ] {
        let spec = format!(
            r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "until": {{"matches": "x"}},
               "interval_ms": 10, "max_wait_ms": 100, "resume": "{forged}"}}"#,
            path = path.to_str().unwrap()
        );
        let err = match Spec::from_json(&spec) {
            Err(e) => e,
            Ok(spec) => {
                let options = WaitOptions::default()
                    .policy(Policy::default().grants(Grants::none().file_root(&dir)));
                Engine::global().run(spec, options).unwrap_err()
            }
        };
        assert_eq!(err.rule, waitfor::Rule::InvalidResume, "{err}");
    }
}

#[cfg(unix)]
#[test]
fn a_directory_or_a_fifo_is_refused_at_the_first_sample() {
    let dir = temp_dir("file-kinds");
    let err = sample_error(&mut FileProbe::new(&dir));
    assert!(err.contains("is a directory"), "{err}");
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = sample_error(&mut FileProbe::new(&fifo));
    assert!(err.contains("is a FIFO"), "{err}");
    // Through the engine: a probe error at the first sample, not a timeout.
    let spec = Spec::from_json(&format!(
        r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "until": {{"matches": "x"}}, "max_wait_ms": 30000}}"#,
        path = dir.to_str().unwrap()
    ))
    .unwrap();
    let options =
        WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(&dir)));
    let result = Engine::global().run(spec, options).unwrap();
    assert_eq!(result.outcome, Outcome::ProbeError);
    assert!(result.elapsed_ms < 10_000, "{}", result.elapsed_ms);
    assert!(result.error.unwrap().contains("is a directory"));
}

/// `app.log/` names a directory, as the system reads it. Resolved for the
/// grants, it named the file too, so the follower took the file for
/// replaced on every sample and read it again from its start.
#[cfg(unix)]
#[test]
fn a_file_path_ending_in_a_slash_is_refused_not_read_again_from_the_start() {
    let dir = temp_dir("file-slash");
    let log = dir.join("app.log");
    append(&log, b"old: ready\n");
    for path in [
        format!("{}/", log.display()),
        format!("{}/.", log.display()),
    ] {
        let spec = serde_json::json!({
            "probe": {"file": {"path": path}}, "until": {"matches": "ready"},
            "interval_ms": 20, "max_wait_ms": 30000,
        });
        let options =
            WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(&dir)));
        let result = Engine::global()
            .run(Spec::from_json(&spec.to_string()).unwrap(), options)
            .unwrap();
        assert_eq!(result.outcome, Outcome::ProbeError, "{path}: {result:?}");
        let error = result.error.unwrap();
        assert!(error.contains("ends in a slash"), "{error}");
    }
}

#[cfg(unix)]
#[test]
fn a_refusal_ends_the_wait_even_when_probe_errors_are_tolerated() {
    // Retrying cannot make a directory or a FIFO a regular file: the wait
    // fails at its first sample instead of retrying to its deadline.
    let dir = temp_dir("file-refused-tolerated");
    let fifo = dir.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for path in [dir.to_path_buf(), fifo] {
        let spec = Spec::from_json(&format!(
            r#"{{"probe": {{"file": {{"path": {path:?}}}}}, "until": {{"matches": "x"}},
               "on_probe_error": {{"tolerate": 1000}}, "interval_ms": 10, "max_wait_ms": 30000}}"#,
            path = path.to_str().unwrap()
        ))
        .unwrap();
        let options =
            WaitOptions::default().policy(Policy::default().grants(Grants::none().file_root(&dir)));
        let result = Engine::global().run(spec, options).unwrap();
        assert_eq!(result.outcome, Outcome::ProbeError, "{path:?}");
        assert_eq!(result.samples, 0, "{path:?}");
        assert!(result.elapsed_ms < 10_000, "{}", result.elapsed_ms);
    }
}

#[test]
fn a_sample_reads_no_more_than_the_cap_and_one_byte() {
    let dir = temp_dir("file-cap");
    let path = dir.join("log");
    append(&path, b"");
    let mut probe = FileProbe::new(&path);
    read(&mut probe);
    append(&path, &[b'y'; 1 << 20]);
    let small = ProbeContext {
        output_cap: 1000,
        ..ctx()
    };
    assert_eq!(probe.sample(&small).unwrap().text.len(), 1001);
}
