//! The anchor for agentry's runs on Temporal: a bare Temporal workflow of the same shape as an
//! agentry run of `S` steps (two activities a step, a model turn and a tool call, then a last
//! model turn), with nothing of agentry in it, `R` runs at once on `W` workers in this process.
//! Prints runs per second, to set beside `steps` (the same runs, agentry's):
//!
//! ```sh
//! temporal server start-dev --ip 127.0.0.1 --headless --port 7233 --db-filename /tmp/t.db &
//! cargo run --release -p agentry-temporal --example bare -- http://127.0.0.1:7233 3 100 [W]
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, WorkflowGetResultOptions,
    WorkflowStartOptions,
};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::runtime::RuntimeOptions;
use temporalio_sdk::{ActivityOptions, WorkerOptions, WorkflowContext, WorkflowResult};

/// The workflow: `steps` steps of two activities each, then one more activity.
#[workflow]
#[derive(Default)]
struct BareRun;

#[workflow_methods]
impl BareRun {
    #[run(name = "bare.run")]
    async fn run(ctx: &mut WorkflowContext<Self>, steps: u32) -> WorkflowResult<u32> {
        let options =
            || ActivityOptions::with_start_to_close_timeout(Duration::from_secs(30)).build();
        let mut n = 0;
        for _ in 0..steps {
            n = ctx
                .execute_activity(BareActivities::turn, n, options())
                .await?;
            n = ctx
                .execute_activity(BareActivities::call, n, options())
                .await?;
        }
        let n = ctx
            .execute_activity(BareActivities::turn, n, options())
            .await?;
        Ok(n)
    }
}

/// The activities: a model turn and a tool call that do nothing.
struct BareActivities;

#[activities]
impl BareActivities {
    #[activity(name = "bare.turn")]
    async fn turn(self: Arc<Self>, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n + 1)
    }

    #[activity(name = "bare.call")]
    async fn call(self: Arc<Self>, _ctx: ActivityContext, n: u32) -> Result<u32, ActivityError> {
        Ok(n + 1)
    }
}

async fn client(target: &str) -> Result<Client, Box<dyn std::error::Error>> {
    let connection = Connection::connect(
        ConnectionOptions::new(temporalio_client::Url::parse(target)?)
            .identity(format!("bare@{}", std::process::id()))
            .build(),
    )
    .await?;
    Ok(Client::new(
        connection,
        ClientOptions::new("default").build(),
    )?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:7233".into());
    let steps: u32 = args.next().map_or(Ok(3), |s| s.parse())?;
    let runs: usize = args.next().map_or(Ok(100), |s| s.parse())?;
    let workers: usize = args.next().map_or(Ok(1), |s| s.parse())?;
    let queue = format!("bare-{}", std::process::id());

    let runtime = temporalio_sdk::Runtime::from_current_tokio(RuntimeOptions::default())?;
    let mut stops = Vec::new();
    let mut running = Vec::new();
    for _ in 0..workers {
        let options = WorkerOptions::new(queue.clone())
            .register_workflow::<BareRun>()?
            .register_activities(BareActivities)
            .build();
        let mut worker = temporalio_sdk::Worker::new(&runtime, client(&target).await?, options)?;
        stops.push(worker.shutdown_handle());
        running.push(async move { worker.run().await });
    }
    let workers_done = futures::future::join_all(running);
    let bench = async {
        let client = client(&target).await?;
        let start_one = |id: String| {
            let client = client.clone();
            let queue = queue.clone();
            async move {
                client
                    .start_workflow(
                        BareRun::run,
                        steps,
                        WorkflowStartOptions::new(queue, id.clone()).build(),
                    )
                    .await?;
                let out = client
                    .get_workflow_handle::<BareRun>(&id)
                    .get_result(WorkflowGetResultOptions::default())
                    .await?;
                Ok::<u32, Box<dyn std::error::Error>>(out)
            }
        };
        // Warm-up: the workers' first polls and the connection.
        start_one(format!("{queue}-warm")).await?;
        let start = Instant::now();
        let all = (0..runs).map(|i| start_one(format!("{queue}-{i}")));
        for out in futures::future::join_all(all).await {
            assert_eq!(out?, 2 * steps + 1);
        }
        let wall = start.elapsed().as_secs_f64();
        println!(
            "{{\"workflow\": \"bare\", \"steps\": {steps}, \"concurrent_runs\": {runs}, \"workers\": {workers}, \"concurrent_wall_s\": {wall:.2}, \"runs_per_s\": {:.1}}}",
            runs as f64 / wall
        );
        for stop in &stops {
            stop();
        }
        Ok::<(), Box<dyn std::error::Error>>(())
    };
    let (outcome, _) = tokio::join!(bench, workers_done);
    outcome
}
