"""The engine: seating a panel and running it, route mode's sticky member and failover, the
order of route members, and merged mode. The engine never sees a wire format."""
