import TableModel
import TablecastProtocol
import WebSocketTransport

/// Replication: the engine follows what other nodes committed, or is read again from the store.
extension TableCommits {
    /// Applies what other nodes committed after the engine's version, read from the store's log, and fans it out
    /// in version order. A log that no longer reaches back (pruned) reloads the table and sends subscribers a
    /// snapshot. False when the store could not be read; the table then keeps serving the committed state.
    nonisolated(nonsending) func follow(
        _ catchUps: TableCatchUps, _ audience: TableAudience, for actor: TableActor
    ) async -> Bool {
        let followed: FollowedBatches
        switch await actor.replication.read(after: engine.table.version, table: name) {
        case .followed(let batches):
            followed = batches
        case .gap:
            await reload(catchUps, audience, for: actor)
            return broken == nil
        case .failed(let error):
            // The engine is at a committed version (the pipeline is idle): it is served as it is.
            context.logFailure("could not read other nodes' commits", error, table: name)
            return false
        }
        do {
            try followed.apply(to: &engine)
        } catch {
            context.logger.error(
                "another node's batch does not apply", metadata: ["table": "\(name)", "error": "\(error)"])
            await reload(catchUps, audience, for: actor)
            return broken == nil
        }
        for entry in followed.entries {
            catchUps.keep(
                entry.update, version: entry.version, time: entry.time, originName: entry.originName,
                originUser: entry.originUser)
        }
        audience.deliver(followed.entries.map(\.update))
        let version = engine.table.version
        actor.watermarks.withLock { $0.stored(upTo: version) }
        actor.listing.set(version: version, subscribers: audience.subscribers.count)
        return true
    }

    /// Replaces the in-memory state, which holds changes that were never stored, with the store's. A table that
    /// cannot be read is ``broken``: it refuses work with `unavailable`, and tries again with the next intent or
    /// subscribe, so that it serves as before once the store answers (a restarted PostgreSQL, a freed disk).
    nonisolated(nonsending) func reload(
        _ catchUps: TableCatchUps, _ audience: TableAudience, for actor: TableActor
    ) async {
        do throws(ProtocolError) {
            let loaded = try await stored.load()
            let previous = engine.table.version
            engine = loaded
            catchUps.restart(after: loaded.table.version)
            actor.watermarks.withLock { $0.stored(upTo: loaded.table.version) }
            broken = nil
            if actor.replication.reloadMayBringNews && loaded.table.version != previous && !audience.isEmpty {
                context.transport.send(catchUps.share(loaded.table, for: actor), to: audience.subscribers.ids)
            }
            actor.listing.set(version: loaded.table.version, subscribers: audience.subscribers.count)
        } catch {
            broken = error.message
            // The engine still holds the changes that were never stored: list the last version that was.
            actor.listing.set(version: actor.watermarks.withLock { $0.stored }, subscribers: audience.subscribers.count)
        }
    }
}
