//! JavaScript probes, called in batches. A wait's probe is a [`JsProbe`]
//! (an [`AsyncProbe`]): `begin` only queues the call, with its [`Reply`],
//! in its environment's channel; no thread waits for JavaScript. On the
//! JavaScript thread, `lib/channel.js` takes the due calls into a typed
//! array ([`WaitChannel::take`]), runs them, and sends the answers back
//! together ([`WaitChannel::settle`]: numbers in typed arrays, the texts in
//! one byte buffer). A wait has at most one call in flight, so a call is
//! known by its wait's slot and never-reused key (see `slots`).

use std::sync::Arc;

use napi::bindgen_prelude::Float64ArraySlice;
use napi_derive::napi;
use waitfor::{AsyncProbe, CancelToken, ProbeContext, ProbeError, Reply};

use crate::answer::{self, Answer};
use crate::channel::{Channel, WaitChannel};
use crate::errors;

/// Numbers per call in the batch [`WaitChannel::take`] writes.
const CALL_FIELDS: usize = 6;

/// One probe call waiting for JavaScript to take it.
pub struct Call {
    /// `[slot, key, sample, elapsedMs, budgetMs, outputCap]`.
    fields: [f64; CALL_FIELDS],
    /// The wait's token: cancelled once the wait has ended.
    cancel: CancelToken,
    /// Where the call answers; kept by the channel's `replies` once
    /// JavaScript has taken the call.
    reply: Reply,
}

impl Call {
    /// The slot and key of the call's wait.
    pub fn wait(&self) -> (u32, u64) {
        (self.fields[0] as u32, self.fields[1] as u64)
    }
}

/// The answers of one [`WaitChannel::settle`] call, as `Answers` in
/// `lib/answer.js` writes them.
struct Batch<'a> {
    flags: &'a [u8],
    exit_codes: &'a [i32],
    lens: &'a [u32],
    bytes: &'a [u8],
}

impl Batch<'_> {
    /// Answer `i`, whose text starts at byte `at`, and where the next one
    /// starts (`settle` checked the lengths).
    fn answer(&self, i: usize, at: usize) -> (Answer, usize) {
        let (text_len, json_len) = (self.lens[2 * i] as usize, self.lens[2 * i + 1] as usize);
        let text = &self.bytes[at..at + text_len];
        let json = &self.bytes[at + text_len..at + text_len + json_len];
        let flags = self.flags[i];
        let answer = match std::str::from_utf8(json) {
            // A text that is not UTF-8 (bytes a probe returned) is read as
            // `Buffer.toString` would: invalid sequences become U+FFFD.
            Ok(json) => answer::observation(
                flags,
                String::from_utf8_lossy(text).into_owned(),
                (flags & answer::JSON != 0).then_some(json),
                self.exit_codes[i],
            ),
            Err(e) => Err(ProbeError::new(format!(
                "the probe's JSON text is not UTF-8: {e}"
            ))),
        };
        (answer, at + text_len + json_len)
    }
}

#[napi]
impl WaitChannel {
    /// Moves due probe calls into `into`, `[slot, key, sample, elapsedMs,
    /// budgetMs, outputCap]` per call, one after another, as many as fit;
    /// returns how many it wrote. Calls of waits that have ended are left
    /// out. The cap lets `lib/answer.js` send only the start of an answer
    /// longer than it (see `capped` there).
    #[napi]
    pub fn take(&self, mut into: Float64ArraySlice<'_>) -> u32 {
        // SAFETY: this runs on the JavaScript thread, which owns the array
        // and does nothing else until `take` returns; nothing else refers
        // to its memory.
        let into = unsafe { into.as_mut() };
        let mut replies = self.replies.borrow_mut();
        let mut written = 0;
        for fields in into.chunks_exact_mut(CALL_FIELDS) {
            // A call of a wait that has ended is dropped: its reply answers
            // a wait nobody listens to any more.
            let Some(call) = std::iter::from_fn(|| self.channel.next_call())
                .find(|call| !call.cancel.is_cancelled())
            else {
                break;
            };
            fields.copy_from_slice(&call.fields);
            let (slot, key) = call.wait();
            // A reply the slot still held belongs to a wait that has ended.
            drop(replies.put(slot, (key, call.reply)));
            written += 1;
        }
        written
    }

    /// Answers `count` probe calls in flight, all at once (see `Answers`
    /// in `lib/answer.js`); answers for waits that have ended are ignored.
    /// Throws only when the arrays are shorter than `count` says.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn settle(
        &self,
        count: u32,
        slots: &[u32],
        keys: &[f64],
        flags: &[u8],
        exit_codes: &[i32],
        lens: &[u32],
        bytes: &[u8],
    ) -> napi::Result<()> {
        let n = count as usize;
        let total: usize = lens.iter().take(2 * n).map(|&len| len as usize).sum();
        if slots.len() < n
            || keys.len() < n
            || flags.len() < n
            || exit_codes.len() < n
            || lens.len() < 2 * n
            || bytes.len() < total
        {
            return Err(errors::other(
                "internal",
                format!("settle: fewer than {n} slots, keys, flags, exit codes or lengths, or fewer bytes than they say"),
            ));
        }
        let replies: Vec<Option<Reply>> = {
            let mut replies = self.replies.borrow_mut();
            slots[..n]
                .iter()
                .zip(&keys[..n])
                .map(|(&slot, &key)| {
                    let key = key as u64;
                    replies
                        .take_if(slot, |held| held.0 == key)
                        .map(|(_, reply)| reply)
                })
                .collect()
        };
        let batch = Batch {
            flags,
            exit_codes,
            lens,
            bytes,
        };
        let mut at = 0;
        let answers = replies.into_iter().enumerate().filter_map(|(i, reply)| {
            let (answer, next) = match reply {
                Some(_) => {
                    let (answer, next) = batch.answer(i, at);
                    (Some(answer), next)
                }
                // An answer nobody waits for any more is not even read.
                None => (None, at + (lens[2 * i] + lens[2 * i + 1]) as usize),
            };
            at = next;
            reply.zip(answer)
        });
        Reply::send_all(answers);
        Ok(())
    }
}

/// A wait's JavaScript probe: its calls go through its environment's
/// channel.
pub struct JsProbe {
    /// The wait's slot among its environment's probe waits.
    pub slot: u32,
    pub key: u64,
    pub channel: Arc<Channel>,
}

impl AsyncProbe for JsProbe {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        let call = Call {
            fields: [
                f64::from(self.slot),
                self.key as f64,
                ctx.sample as f64,
                ctx.elapsed.as_secs_f64() * 1e3,
                ctx.budget.as_secs_f64() * 1e3,
                ctx.output_cap as f64,
            ],
            cancel: ctx.cancel.clone(),
            reply,
        };
        self.channel.queue(call);
    }

    fn name(&self) -> &str {
        "javascript"
    }
}
