//! One request on its way to the worker thread, with the channel its answer goes back on.

use moot_backends::{BackendError, Completion, CompletionRequest};
use tokio::sync::oneshot;

pub(crate) type Reply = oneshot::Sender<Result<Completion, BackendError>>;

pub(crate) struct Job {
    pub(crate) request: CompletionRequest,
    pub(crate) reply: Reply,
}
