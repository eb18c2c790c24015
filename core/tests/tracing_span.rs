//! Each wait is a `wait_for` span with AURA's attributes.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::prelude::*;
use waitfor::{probe_fn, Condition, Engine, Observation, Pattern, Spec};

#[derive(Clone, Default)]
struct Recorded(Arc<Mutex<HashMap<String, String>>>);

impl Visit for Recorded {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .lock()
            .insert(field.name().to_string(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .lock()
            .insert(field.name().to_string(), value.to_string());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0
            .lock()
            .insert(field.name().to_string(), value.to_string());
    }
}

struct Capture(Recorded, Arc<Mutex<Vec<String>>>);

impl<S: Subscriber> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        self.1.lock().push(attrs.metadata().name().to_string());
        attrs.record(&mut self.0.clone());
    }
    fn on_record(&self, _id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        values.record(&mut self.0.clone());
    }
}

#[test]
fn the_span_carries_the_wait_attributes() {
    let fields = Recorded::default();
    let names = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Capture(fields.clone(), names.clone()));
    let result = tracing::subscriber::with_default(subscriber, || {
        let mut n = 0;
        let probe = probe_fn(move |_| {
            n += 1;
            Ok(Observation::text(if n < 2 { "no" } else { "ready" }))
        })
        .named("kubectl_get");
        let spec = Spec::new(Condition::Matches(Pattern::regex("ready")))
            .interval(Duration::from_millis(10))
            .max_wait(Duration::from_secs(30));
        Engine::global().wait(spec, probe).unwrap()
    });
    assert_eq!(*names.lock(), vec!["wait_for"]);
    let fields = fields.0.lock();
    assert_eq!(fields["wait_condition"], "matches /ready/");
    assert_eq!(fields["probe_tool"], "kubectl_get");
    assert_eq!(fields["poll_count"], "2");
    assert_eq!(fields["stop_reason"], "matched");
    assert_eq!(fields["elapsed_ms"], result.elapsed_ms.to_string());
}
