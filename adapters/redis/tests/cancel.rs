//! Cancel safety on Redis, by the shared suite (`alkstore-kit-harness`): calls dropped at
//! random points leave no lease and no waiter held by no handle, and a thousand dropped calls
//! open no new connections (counted by `INFO stats` on a server of the test's own).

mod common;

alkstore_kit_harness::cancel_tests!(common::Fixture);
