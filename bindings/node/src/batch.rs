//! JavaScript probes, called in batches: one JavaScript turn runs every
//! probe call that is due, and one native call hands all their answers
//! back.
//!
//! A wait's probe is a [`JsProbe`], an [`AsyncProbe`]: on the engine's
//! scheduler thread, `begin` only pushes the call into its environment's
//! inbox (see `channel`) and keeps the call's [`Reply`]. No thread waits
//! for JavaScript. On the JavaScript thread, `lib/channel.js` takes the
//! due calls into a reused typed array ([`WaitChannel::take`]), runs each
//! wait's probe function (it keeps them by key), and sends the answers
//! back together ([`WaitChannel::settle`], one engine wake for the lot);
//! answers of probes that return a Promise follow in later sends.
//!
//! A wait has at most one call in flight, and the engine abandons a call
//! only when the wait ends, so calls are known by their wait's key. Keys
//! are never reused (JavaScript counts them up to 2^53), so a late answer
//! never reaches another wait.

use std::sync::Arc;

use napi::bindgen_prelude::Float64ArraySlice;
use napi_derive::napi;
use waitfor::{AsyncProbe, CancelToken, ProbeContext, Reply};

use crate::answer;
use crate::channel::{Channel, WaitChannel};
use crate::errors;

/// Numbers per call in the batch [`WaitChannel::take`] writes.
const CALL_FIELDS: usize = 4;

/// One probe call waiting for JavaScript to take it.
pub struct Call {
    /// `[key, sample, elapsedMs, budgetMs]`.
    fields: [f64; CALL_FIELDS],
    /// The wait's token: cancelled once the wait has ended.
    cancel: CancelToken,
}

impl Call {
    /// The key of the call's wait.
    pub fn key(&self) -> u64 {
        self.fields[0] as u64
    }
}

#[napi]
impl WaitChannel {
    /// Moves due probe calls into `into`, `[key, sample, elapsedMs,
    /// budgetMs]` per call, one after another, as many as fit; returns
    /// how many it wrote. Calls of waits that have ended are left out.
    #[napi]
    pub fn take(&self, mut into: Float64ArraySlice<'_>) -> u32 {
        // SAFETY: this runs on the JavaScript thread, which owns the array
        // and does nothing else until `take` returns; nothing else refers
        // to its memory.
        let into = unsafe { into.as_mut() };
        let mut slots = into.chunks_exact_mut(CALL_FIELDS);
        let mut inbox = self.channel.inbox.lock();
        let (mut seen, mut written) = (0, 0u32);
        for call in &inbox.due {
            if call.cancel.is_cancelled() {
                seen += 1;
                continue;
            }
            let Some(slot) = slots.next() else { break };
            slot.copy_from_slice(&call.fields);
            seen += 1;
            written += 1;
        }
        inbox.due.drain(..seen);
        written
    }

    /// Answers `count` probe calls in flight, all at once: per call its
    /// wait's key, flags (see `lib/answer.js`), exit code and text (the
    /// message of an error), and for each call flagged JSON, in order,
    /// its JSON text. Answers for waits that have ended are ignored.
    /// Throws only when the arrays are shorter than `count`.
    #[napi]
    pub fn settle(
        &self,
        count: u32,
        keys: &[f64],
        flags: &[u8],
        exit_codes: &[i32],
        texts: Vec<String>,
        jsons: Vec<String>,
    ) -> napi::Result<()> {
        let n = count as usize;
        if keys.len() < n || flags.len() < n || exit_codes.len() < n || texts.len() < n {
            return Err(errors::other(
                "internal",
                format!("settle: fewer than {n} keys, flags, exit codes or texts"),
            ));
        }
        let replies: Vec<Option<Reply>> = {
            let mut inbox = self.channel.inbox.lock();
            keys[..n]
                .iter()
                .map(|key| inbox.replies.remove(&(*key as u64)))
                .collect()
        };
        let mut jsons = jsons.iter();
        let answers = replies
            .into_iter()
            .zip(flags.iter().zip(texts).zip(exit_codes))
            .filter_map(|(reply, ((&flags, text), &exit_code))| {
                let json = if flags & answer::JSON != 0 {
                    jsons.next().map(String::as_str)
                } else {
                    None
                };
                // An answer nobody waits for any more is not even read.
                reply.map(|reply| (reply, answer::observation(flags, text, json, exit_code)))
            });
        Reply::send_all(answers);
        Ok(())
    }
}

/// A wait's JavaScript probe: its calls go through its environment's
/// inbox.
pub struct JsProbe {
    pub key: u64,
    pub channel: Arc<Channel>,
}

impl AsyncProbe for JsProbe {
    fn begin(&mut self, ctx: &ProbeContext, reply: Reply) {
        let call = Call {
            fields: [
                self.key as f64,
                ctx.sample as f64,
                ctx.elapsed.as_secs_f64() * 1e3,
                ctx.budget.as_secs_f64() * 1e3,
            ],
            cancel: ctx.cancel.clone(),
        };
        let key = self.key;
        self.channel.push(|inbox| {
            inbox.replies.insert(key, reply);
            inbox.due.push_back(call);
        });
    }

    fn name(&self) -> &str {
        "javascript"
    }
}

impl Drop for JsProbe {
    /// The wait has ended: a call still in flight is abandoned.
    fn drop(&mut self) {
        let reply = self.channel.inbox.lock().replies.remove(&self.key);
        // Dropped outside the lock: a reply answers as it goes.
        drop(reply);
    }
}
