//! `agentry-faultproxy`: the fault proxy from the command line.

use agentry_faultproxy::{Fault, FaultProxy, Plan};
use std::time::Duration;

const USAGE: &str = "usage: agentry-faultproxy --upstream HOST:PORT [--listen ADDR] [--fault SPEC]... [--seed N --rate R] [--on-request TEXT]

Listens on ADDR (127.0.0.1:0 by default; the address is printed on stdout) and forwards to
HOST:PORT. The first connections get the --fault specs in order, then every connection passes;
with --seed and --rate, each connection gets one of the specs at random with probability R.
With --on-request, the plan counts the HTTP requests that contain TEXT instead of connections.
Each injected fault is printed on stderr.

Faults: pass, status:CODE[:RETRY_AFTER], slow:DURATION, cut-after:TEXT, stall, stall-after:TEXT,
garbage:BYTES, reset, reset-after:TEXT (a duration is 250ms, 2s, or milliseconds).";

struct Args {
    listen: String,
    upstream: String,
    faults: Vec<Fault>,
    seed: Option<u64>,
    rate: Option<f64>,
    on_request: Option<String>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        listen: "127.0.0.1:0".into(),
        upstream: String::new(),
        faults: Vec::new(),
        seed: None,
        rate: None,
        on_request: None,
    };
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => parsed.listen = value,
            "--upstream" => parsed.upstream = value,
            "--fault" => parsed
                .faults
                .push(value.parse().map_err(|e| format!("--fault {e}"))?),
            "--seed" => {
                parsed.seed = Some(value.parse().map_err(|_| "--seed takes a number")?);
            }
            "--rate" => {
                let rate: f64 = value.parse().map_err(|_| "--rate takes a number")?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err("--rate is a probability, from 0 to 1".into());
                }
                parsed.rate = Some(rate);
            }
            "--on-request" if !value.is_empty() => parsed.on_request = Some(value),
            _ => return Err(format!("unknown argument `{flag}`")),
        }
    }
    if parsed.upstream.is_empty() {
        return Err("--upstream is required".into());
    }
    if parsed.seed.is_some() != parsed.rate.is_some() {
        return Err("--seed and --rate go together".into());
    }
    if parsed.rate.is_some_and(|r| r > 0.0) && parsed.faults.is_empty() {
        return Err("--rate needs at least one --fault to choose from".into());
    }
    Ok(parsed)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) if error.is_empty() => {
            println!("{USAGE}");
            return;
        }
        Err(error) => {
            eprintln!("agentry-faultproxy: {error}\n\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut plan = match (args.seed, args.rate) {
        (Some(seed), Some(rate)) => Plan::seeded(seed, rate, args.faults),
        _ => Plan::first(args.faults),
    };
    if let Some(marker) = &args.on_request {
        plan = plan.on_requests_containing(marker);
    }
    let proxy = match FaultProxy::bind(&args.listen, &args.upstream, plan).await {
        Ok(proxy) => proxy,
        Err(error) => {
            eprintln!(
                "agentry-faultproxy: cannot listen on {} in front of {}: {error}",
                args.listen, args.upstream
            );
            std::process::exit(1);
        }
    };
    println!("listening on {}", proxy.addr());
    let mut reported = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let injected = proxy.injected();
        for i in &injected[reported..] {
            eprintln!(
                "fault: connection {} (plan index {}): {}",
                i.connection, i.index, i.fault
            );
        }
        reported = injected.len();
    }
}
