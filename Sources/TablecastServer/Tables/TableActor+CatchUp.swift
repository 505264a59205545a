import TableModel
import TableStore
import TablecastProtocol
import WebSocketTransport

/// Subscribers: catch-ups (see ``CatchUpPlan``), shared snapshots (see ``SnapshotSharing``) and presence.
extension TableActor {
    func subscribe(_ requester: Requester, ref: String?, since: UInt64?, epoch: String?) async {
        guard isOpen(requester) else { return }
        if broken != nil { await reload() }
        if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
        // A table nobody here watched may have missed who is on it elsewhere.
        if subscribers.isEmpty { await followPresence() }
        guard await catchUp(requester.connection, since: since, epoch: epoch) else {
            return waitForSnapshot(requester, ref: ref, subscribing: true)
        }
        finishCatchUp(requester, ref: ref, subscribing: true)
    }

    func refresh(_ requester: Requester, ref: String?, since: UInt64?, epoch: String?) async {
        guard isOpen(requester) else { return }
        if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
        guard await catchUp(requester.connection, since: since, epoch: epoch) else {
            return waitForSnapshot(requester, ref: ref, subscribing: false)
        }
        finishCatchUp(requester, ref: ref, subscribing: false)
    }

    /// Brings a client from `since` (in epoch `epoch`) to the current version as ``CatchUpPlan`` says: the missed
    /// updates from memory or the store's log, otherwise the shared snapshot. False when that snapshot must be
    /// built first (nothing was sent).
    private func catchUp(_ connection: WebSocketConnectionID, since: UInt64?, epoch: String?) async -> Bool {
        // With a shared store, what another node acknowledged a moment ago may not have been followed yet: read it
        // first, so a client that saw an ack from one node finds the change on every other. Not while the store is
        // down: the catch-up would wait for it in vain.
        if context.health.isUp { await follow() }
        let limit = context.catchUpLimit
        switch CatchUpPlan(
            since: since, epoch: epoch, current: engine.table.version, tableEpoch: epochText, limit: limit)
        {
        case .upToDate:
            return true
        case .updates(let since):
            if let missed = await updates(after: since), CatchUpPlan.fits(missed.map(\.count), limit) {
                for message in missed { context.transport.send(message, to: connection) }
                return true
            }
        case .snapshot:
            break
        }
        guard let catchUp = fromSharedSnapshot() else { return false }
        for message in catchUp { context.transport.send(message, to: connection) }
        return true
    }

    /// The committed updates after `since`, from memory or else the store's log; nil when they are not all there
    /// (or the log could not be read, which is logged and counted: the client then gets a snapshot).
    private func updates(after since: UInt64) async -> [WebSocketMessage]? {
        if let messages = history.messages(after: since) { return Array(messages) }
        let name = name
        let current = engine.table.version
        let entries: [LogEntry]
        do {
            entries = try await context.committer.perform { try $0.logEntries(name, after: Int64(since)) }
        } catch {
            context.logFailure(
                "could not read the log for a catch-up (a snapshot was sent instead)", error, table: name,
                level: .warning)
            return nil
        }
        guard entries.count == Int(current - since), entries.first?.version == Int64(since + 1) else { return nil }
        var messages: [WebSocketMessage] = []
        for entry in entries {
            guard let batch = try? Batch(json: JSONValue(parsing: entry.batch)) else {
                context.logger.error(
                    "a log entry does not decode", metadata: ["table": "\(name)", "version": "\(entry.version)"])
                return nil
            }
            let update = ServerMessage.Update(
                table: name, version: UInt64(entry.version), originClient: entry.originClient,
                originRef: entry.originRef,
                batch: batch)
            messages.append(WebSocketMessage(kind: .text, bytes: update.encoded))
        }
        return messages
    }

    /// Answers a catch-up whose snapshot or updates were sent: `subscribed` (and the subscription) or `refreshed`.
    private func finishCatchUp(_ requester: Requester, ref: String?, subscribing: Bool) {
        guard subscribing else { return sendStatus("refreshed", ref: ref, to: requester) }
        sendStatus("subscribed", ref: ref, to: requester)
        if subscribers.insert(requester.connection) { context.metrics.subscribers.increment() }
        presence.join(
            .local(requester.connection), key: requester.presenceKey, client: requester.client, name: requester.name,
            user: requester.user)
        publishStatus()
    }

    /// Ends a catch-up with `subscribed` or `refreshed` (`type`), carrying the presence every subscriber has now:
    /// the published state, written once for all who catch up until the next delta.
    private func sendStatus(_ type: StaticString, ref: String?, to requester: Requester) {
        let status = ServerMessage.TableStatus(
            table: name, version: engine.table.version, epoch: epochText, rules: engine.table.rules)
        let text = status.encoded(
            type: type, ref: ref, you: requester.presenceKey, sharedPresence: presence.publishedStateJSON())
        context.transport.send(WebSocketMessage(kind: .text, bytes: text), to: requester.connection)
    }

    // MARK: Shared snapshots

    /// Queues a catch-up behind the snapshot of the committed table, starting to build it unless that is under way.
    private func waitForSnapshot(_ requester: Requester, ref: String?, subscribing: Bool) {
        if snapshots.wait(.init(requester: requester, ref: ref, subscribing: subscribing)) { buildSnapshot() }
    }

    /// Builds a snapshot of the committed table on another task, so that the table's writers do not wait for it.
    /// While the memory budget's snapshot account is over its share (snapshots still queued to slow readers), the
    /// build waits and is tried again: joiners wait rather than the server grow.
    func buildSnapshot() {
        let account = context.budget[.snapshots]
        guard !account.isOver else {
            account.degraded()
            return enqueue(.retrySnapshot, after: Self.snapshotRetryInterval)
        }
        let table = engine.table
        let (name, epoch) = (name, epochText)
        context.tasks.spawn { [self] in
            let snapshot = ServerMessage.snapshot(
                table: name, version: table.version, epoch: epoch, rules: table.rules, sections: table.sections)
            let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
            message.charge(to: account)
            enqueue(.snapshotBuilt(version: table.version, rules: table.rules, message))
        }
    }

    /// The snapshot of the committed table, built now and shared with the catch-ups that follow.
    func shareSnapshot() -> WebSocketMessage {
        let table = engine.table
        let snapshot = ServerMessage.snapshot(
            table: name, version: table.version, epoch: epochText, rules: table.rules, sections: table.sections)
        let message = WebSocketMessage(kind: .text, bytes: snapshot.encoded)
        message.charge(to: context.budget[.snapshots])
        context.metrics.snapshotsEncoded.increment()
        snapshots.share(.init(version: table.version, rules: table.rules, message: message))
        expireSnapshot(version: table.version)
        return message
    }

    /// The snapshot at `version` is ready: it becomes the shared one, and each waiter still connected gets it, the
    /// updates committed since (or, when they are too many, waits for a newer snapshot) and its answer.
    func snapshotBuilt(version: UInt64, rules: TableRules, _ message: WebSocketMessage) {
        context.metrics.snapshotsEncoded.increment()
        let waiters = snapshots.built(.init(version: version, rules: rules, message: message))
        expireSnapshot(version: version)
        let catchUp = fromSharedSnapshot()
        for waiter in waiters where isOpen(waiter.requester) {
            if let refusal = unavailability {
                refuse(waiter.requester, ref: waiter.ref, refusal)
                continue
            }
            guard let catchUp else {
                snapshots.requeue(waiter)
                continue
            }
            for message in catchUp { context.transport.send(message, to: waiter.requester.connection) }
            finishCatchUp(waiter.requester, ref: waiter.ref, subscribing: waiter.subscribing)
        }
        if snapshots.startBuilding() { buildSnapshot() }
    }

    /// Lets go of the shared snapshot of `version` after ``snapshotLifetime``.
    private func expireSnapshot(version: UInt64) {
        enqueue(.snapshotExpired(version: version), after: Self.snapshotLifetime)
    }

    /// The shared snapshot followed by the updates committed after it, when they are all kept and fit the catch-up
    /// bound and the rules have not changed since; nil when a newer snapshot is needed.
    private func fromSharedSnapshot() -> [WebSocketMessage]? {
        snapshots.catchUp(
            version: engine.table.version, rules: engine.table.rules, history: history, limit: context.catchUpLimit)
    }

    // MARK: Presence

    func changePresence(_ requester: Requester, ref: String?, _ change: TableWork.PresenceChange) {
        if let refusal = unavailability { return refuse(requester, ref: ref, refusal) }
        let member = PresenceMember.local(requester.connection)
        guard presence.contains(member) else {
            return refuse(
                requester, ref: ref,
                ProtocolError(.badRequest, "presence on table '\(name)' needs a subscription to it first"))
        }
        switch change {
        case .editing(let on): presence.setEditing(member, on)
        case .beginEditingRow(let row): presence.beginEditingRow(member, row: row)
        case .endEditingRow(let row): presence.endEditingRow(member, row: row)
        }
    }

    func removeSubscriber(_ connection: WebSocketConnectionID) {
        if subscribers.remove(connection) {
            context.metrics.subscribers.decrement()
            publishStatus()
        }
        presence.leave(.local(connection))
    }

    /// Sends the presence delta now, or once ``presenceInterval`` since the last one is over (with whatever changed
    /// meanwhile), as the ``PresencePacer`` says.
    func broadcastPresenceWhenDue() {
        let now = ContinuousClock.now
        switch presencePacer.news(at: now) {
        case .waiting:
            return
        case .wait(let delay):
            return context.tasks.spawn { [self] in
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                await presenceWokeUp()
            }
        case .sendNow:
            break
        }
        if let cluster = context.clusterPresence {
            let local = ClusterPresence.Share(
                clients: presence.listed { if case .local = $0 { true } else { false } },
                viewers: presence.ownViewerCount)
            if local != sharedPresence {
                sharedPresence = local
                cluster.publish(table: name, local)
            }
        }
        guard let delta = presence.takeDelta(table: name) else { return }
        presencePacer.sent(at: now)
        context.send(.presence(delta), to: subscribers.ids)
    }

    private func presenceWokeUp() {
        presencePacer.woke()
        if presence.hasNews { broadcastPresenceWhenDue() }
    }

    /// Reads the other nodes' presence on the table and brings their entries on the board in line with it;
    /// subscribers hear of a change with the next delta.
    func followPresence() async {
        guard let cluster = context.clusterPresence else { return }
        otherNodesPresence.show(await cluster.others(on: name), on: &presence, as: PresenceMember.remote)
    }
}
