//! A component's [`Problems`] in its `GET /health`: what its parts record,
//! clear and watch is what the owner is told, at every request, over real
//! HTTP as `crabup ps` asks it.

use crabtalk_home::{Home, PortFile, Service};
use crabtalk_kit::Problems;
use crabtalk_kit::mcp::{mcp_router, run_mcp_reporting};

#[derive(Clone)]
struct Empty;
impl rmcp::ServerHandler for Empty {}

/// `GET /health` of the component on `port`, as `crabup ps` asks it.
async fn health(home: &Home, port: u16) -> Vec<String> {
    let token = crabtalk_home::token::read_token(home).unwrap();
    tokio::task::spawn_blocking(move || {
        crabtalk_command::health::check(
            port,
            Some(&token),
            crabtalk_command::health::HEALTH_TIMEOUT,
        )
    })
    .await
    .unwrap()
    .unwrap()
    .problems
}

#[tokio::test]
async fn health_lists_the_problems_recorded_and_cleared_while_serving() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::new(dir.path());
    let service = Service::new("probe", "crabtalk-probe", "test").unwrap();
    let problems = Problems::default();
    problems.watch(|| vec!["an engine is suspended".to_owned()]);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = {
        let (home, service, problems) = (home.clone(), service.clone(), problems.clone());
        tokio::spawn(async move {
            run_mcp_reporting(&home, &service, mcp_router(|| Empty), problems, async {
                let _ = stopped.await;
            })
            .await
        })
    };
    let path = service.port_file(&home);
    let port = crabtalk_testkit::poll_until("the port file", async || {
        PortFile::read(&path).ok().map(|file| file.port)
    })
    .await;
    assert_eq!(health(&home, port).await, ["an engine is suspended"]);
    problems.set("token", "the token was refused");
    assert_eq!(
        health(&home, port).await,
        ["the token was refused", "an engine is suspended"]
    );
    problems.clear("token");
    assert_eq!(health(&home, port).await, ["an engine is suspended"]);
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
