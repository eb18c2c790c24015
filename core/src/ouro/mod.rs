//! Ouro AX typed waits: the `wait/1` envelope, its checks and text, exit
//! codes, command templates for resuming, the built-in JSON Lines event
//! source with a declarative event matcher, and the wait itself
//! ([`wait_for`], [`start`], [`follow`], on the engine; [`simulate_wait_for`]
//! on virtual time; [`Stepper`] on the host's own clock) with the JSONL query behind `waitfor events`
//! ([`EventsQuery`]).
//!
//! The contract is `shared/seeds/ouro-ax-wait.md`; the seed's camelCase
//! names are kept in JSON, and its functions map to snake_case here
//! (`waitText` is [`wait_text`], `validateWait` is [`validate_wait`], ...).
//! Durations (`parseDuration`, `formatDuration`) live in
//! [`crate::duration`].

mod clock;
mod cursor;
mod envelope;
mod events;
mod exit;
mod flags;
pub mod jsonl;
mod matcher;
mod stepper;
mod template;
mod text;
mod validate;
mod wait_for;

pub use crate::keyed::CursorKey;
pub use clock::rfc3339;
pub(crate) use clock::Clock;
pub use cursor::JsonlCursor;
pub use envelope::{
    wait, wait_json, AxEvent, AxRef, Fresh, NextStep, Wait, WaitError, WaitFields, WaitState,
    WAIT_STATES, WAIT_VERSION,
};
pub use events::{jsonl_error, match_error, EventsQuery, CURSOR_END};
pub use exit::{
    default_exit_table, wait_exit, ExitTable, WaitExits, DEFAULT_WAIT_EXITS, UNKNOWN_EXIT,
};
pub use flags::WAIT_FLAGS;
pub use jsonl::{
    JsonlError, JsonlSource, Malformed, WaitRead, DEFAULT_MAX_EVENTS, DEFAULT_MAX_READ_BYTES,
    DEFAULT_TERMINAL_TYPES, MAX_MALFORMED,
};
pub use matcher::{DataCondition, EventMatchSpec, EventMatcher, MatchError};
pub use stepper::{Action, Ended, HostStepper, Stepper};
pub use template::{shell_quote, CommandTemplate, TemplateError};
pub use text::wait_text;
pub use validate::{is_wait, validate_wait, Validation};
pub(crate) use wait_for::prepare_parts;
pub use wait_for::{
    follow, simulate_follow, simulate_wait_for, start, start_follow, wait_for, EventFilter,
    EventWait, FollowLine, NextFn, ReadError, ReadFn, Resume, ResumeFn, WaitForError,
    WaitForOptions, WaitPlan, Waited, DEFAULT_INTERVAL, MIN_TIMEOUT,
};
