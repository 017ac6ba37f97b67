//! Port blocks for isolated environments. A separate interface from the rest of
//! [`Coordination`](crate::Coordination) because it needs no database: the CLI serves
//! `coord port` locally with [`LocalPorts`] alone, without opening (or creating) a store.

use crate::Clock;
use async_trait::async_trait;
use coord_domain::ports::{
    AllocatePortsRequest, AllocatePortsResult, PortsStatusResult, ReleasePortsRequest, ReleasePortsResult,
};
use coord_domain::{Caller, CoordError, CoordResult, Timestamp};
use coord_ports::PortAllocator;
use std::sync::Arc;

/// The port operations, as the doors call them (not audited: no database is involved).
#[async_trait]
pub trait Ports: Send + Sync {
    async fn allocate_ports(&self, caller: &Caller, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult>;
    async fn release_ports(&self, caller: &Caller, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult>;
    async fn ports_status(&self, caller: &Caller) -> CoordResult<PortsStatusResult>;
}

/// The machine's port allocator with a clock.
#[derive(Clone)]
pub struct LocalPorts {
    allocator: Arc<PortAllocator>,
    clock: Arc<dyn Clock>,
}

impl LocalPorts {
    pub fn new(allocator: PortAllocator, clock: Arc<dyn Clock>) -> Self {
        LocalPorts {
            allocator: Arc::new(allocator),
            clock,
        }
    }

    /// Runs a port operation off the async threads (it takes a file lock).
    async fn run<T: Send + 'static>(
        &self,
        caller: &Caller,
        f: impl FnOnce(&PortAllocator, Timestamp) -> CoordResult<T> + Send + 'static,
    ) -> CoordResult<T> {
        caller.validate()?;
        let allocator = self.allocator.clone();
        // Leases are machine-local: with no injected clock, the machine's clock decides.
        let now = self.clock.now().unwrap_or_else(chrono::Utc::now);
        tokio::task::spawn_blocking(move || f(&allocator, now))
            .await
            .map_err(|_| CoordError::internal())?
    }
}

impl LocalPorts {
    /// Allocates for `caller`, who administers the blocks (`admin`) or holds its own.
    pub async fn allocate_as(
        &self,
        caller: &Caller,
        admin: bool,
        req: AllocatePortsRequest,
    ) -> CoordResult<AllocatePortsResult> {
        let who = claimant(caller, admin);
        self.run(caller, move |p, now| p.allocate(&req.session_id, &who, now))
            .await
    }

    /// Releases for `caller`: its own block, or any when it administers them.
    pub async fn release_as(
        &self,
        caller: &Caller,
        admin: bool,
        req: ReleasePortsRequest,
    ) -> CoordResult<ReleasePortsResult> {
        let who = claimant(caller, admin);
        self.run(caller, move |p, now| p.release(&req.session_id, &who, now))
            .await
    }
}

fn claimant(caller: &Caller, admin: bool) -> coord_domain::ports::Claimant {
    coord_domain::ports::Claimant {
        agent_id: caller.agent_id.clone(),
        admin,
    }
}

/// The machine's own processes (`coord port`): they administer the blocks.
#[async_trait]
impl Ports for LocalPorts {
    async fn allocate_ports(&self, caller: &Caller, req: AllocatePortsRequest) -> CoordResult<AllocatePortsResult> {
        self.allocate_as(caller, true, req).await
    }

    async fn release_ports(&self, caller: &Caller, req: ReleasePortsRequest) -> CoordResult<ReleasePortsResult> {
        self.release_as(caller, true, req).await
    }

    async fn ports_status(&self, caller: &Caller) -> CoordResult<PortsStatusResult> {
        self.run(caller, |p, now| p.status(now)).await
    }
}
