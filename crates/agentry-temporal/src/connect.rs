//! Connecting to a Temporal server.

use crate::TemporalError;
use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};

/// Where a Temporal server is and which namespace and task queue runs use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// The server's gRPC address, such as `http://127.0.0.1:7233`.
    pub target: String,
    /// The namespace (`default` on a dev server).
    pub namespace: String,
    /// The task queue the workers poll and the client starts runs on.
    pub task_queue: String,
}

impl Server {
    /// The server at `target` (`http://host:port`), namespace `default`, task queue `agentry`.
    pub fn new(target: impl Into<String>) -> Self {
        Server {
            target: target.into(),
            namespace: "default".into(),
            task_queue: "agentry".into(),
        }
    }

    /// Uses namespace `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Uses task queue `queue`.
    pub fn task_queue(mut self, queue: impl Into<String>) -> Self {
        self.task_queue = queue.into();
        self
    }

    /// A Temporal client of the server's namespace.
    pub(crate) async fn connect(&self) -> Result<Client, TemporalError> {
        let error = |message: String| TemporalError::Connect {
            target: self.target.clone(),
            message,
        };
        let url = Url::parse(&self.target).map_err(|e| {
            error(format!(
                "it is not a URL ({e}); write it as `http://host:port`"
            ))
        })?;
        let connection = Connection::connect(
            ConnectionOptions::new(url)
                .identity(format!("agentry@{}", std::process::id()))
                .build(),
        )
        .await
        .map_err(|e| error(e.to_string()))?;
        Client::new(
            connection,
            ClientOptions::new(self.namespace.clone()).build(),
        )
        .map_err(|e| error(e.to_string()))
    }
}
