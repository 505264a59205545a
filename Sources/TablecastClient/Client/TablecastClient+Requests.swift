import TableModel
import TablecastProtocol
import WebSocketTransport

/// Requests, each an async call answered by its response.
extension TablecastClient {
    /// Subscribes to `table` and returns its replica once caught up. The subscription is renewed (resumed from the
    /// replica's version) after every reconnect until ``unsubscribe(_:)``.
    @discardableResult
    public func subscribe(_ table: String) async throws -> Replica {
        let response = try await request(.subscribe(table))
        guard case .subscribed = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        guard let replica = replica(of: table) else { throw TablecastClientError.unexpectedResponse("no snapshot") }
        return replica
    }

    /// Pull-to-refresh on a subscribed table: the server re-sends what the replica missed (or a snapshot) and
    /// answers `refreshed`; returns the replica then.
    @discardableResult
    public func refresh(_ table: String) async throws -> Replica {
        let response = try await request(.refresh(table))
        guard case .refreshed = response, let replica = replica(of: table) else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return replica
    }

    /// Ends the subscription and forgets the replica.
    public func unsubscribe(_ table: String) async throws {
        _ = try await request(.unsubscribe(table))
    }

    /// The tables on the server.
    public func listTables() async throws -> [ServerMessage.TableSummary] {
        let response = try await request(.plain(.listTables))
        guard case .tables(_, let tables) = response else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return tables
    }

    /// A page of a table's history (read role): the kept changes with versions in `from...to` (nil: from the
    /// oldest kept, to the latest), at most `limit` of them (nil: the server's default, 100), newest or oldest first.
    /// When the range has more, `next` says where the next page starts: pass it as `to` (newest first) or `from`
    /// (oldest first). A version before the oldest kept one is refused with `pruned`.
    public func history(
        _ table: String, from: UInt64? = nil, to: UInt64? = nil, limit: Int? = nil, newestFirst: Bool = true
    ) async throws -> ServerMessage.Changes {
        let response = try await request(
            .plain(.history(table: table, from: from, to: to, limit: limit, newestFirst: newestFirst)))
        guard case .changes(let changes) = response else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return changes
    }

    /// The table as it was at `version` (read role), with its current rules. It does not subscribe and leaves the
    /// table's replica alone. A version before the oldest kept one is refused with `pruned`, a future one with
    /// `out_of_range`.
    public func table(_ table: String, atVersion version: UInt64) async throws -> Replica {
        let response = try await request(.plain(.snapshotAt(table: table, version: version)))
        guard case .historicalSnapshot(_, let name, let version, let epoch, let rules, let sections) = response else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return Replica(name: name, epoch: epoch, table: Table(sections: sections, version: version, rules: rules))
    }

    /// Creates a table (admin); the ack carries its epoch.
    @discardableResult
    public func createTable(_ table: String, sections: [SectionContent] = [], rules: RulesPatch = RulesPatch())
        async throws
        -> ServerMessage.Ack
    {
        try await ack(.plain(.createTable(table: table, sections: sections, rules: rules)))
    }

    /// Drops a table (admin); its subscribers get `dropped`.
    @discardableResult
    public func dropTable(_ table: String) async throws -> ServerMessage.Ack {
        try await ack(.plain(.dropTable(table: table)))
    }

    /// Changes some of a table's rules (admin).
    @discardableResult
    public func setRules(_ table: String, _ rules: RulesPatch) async throws -> ServerMessage.Ack {
        try await ack(.plain(.setRules(table: table, rules: rules)))
    }

    /// Sends an edit intent and returns its ack (after the replica, when subscribed, holds the change).
    /// - Parameters:
    ///   - base: the version the index paths refer to; by default the replica's.
    ///   - ref: the idempotency key; by default a fresh one. A retry with the same ref is never applied twice.
    @discardableResult
    public func send(_ intent: Intent, to table: String, base: Base = .replica, ref: String? = nil) async throws
        -> ServerMessage.Ack
    {
        try await ack(.intent(table: table, base: base, intent), ref: ref)
    }

    /// Inserts a row (the Add button). Flags other than the defaults need the admin role.
    @discardableResult
    public func insert(
        _ table: String, at path: RowPath, value: JSONValue, editable: Bool = true, movable: Bool = true,
        editingStyle: EditingStyle = .delete, base: Base = .replica, ref: String? = nil
    ) async throws -> ServerMessage.Ack {
        let row = RowContent(value: value, editable: editable, movable: movable, editingStyle: editingStyle)
        return try await send(.insert(at: path, row: row), to: table, base: base, ref: ref)
    }

    /// Deletes a row (swipe-to-delete); `id` makes the server check it is the row meant.
    @discardableResult
    public func delete(_ table: String, at path: RowPath, id: String? = nil, base: Base = .replica, ref: String? = nil)
        async throws -> ServerMessage.Ack
    {
        try await send(.delete(RowRef(path, id: id)), to: table, base: base, ref: ref)
    }

    /// Moves a row (the reorder control); the rules may retarget it (see the ack's `resolved`).
    @discardableResult
    public func move(
        _ table: String, from: RowPath, to: RowPath, id: String? = nil, base: Base = .replica, ref: String? = nil
    ) async throws -> ServerMessage.Ack {
        try await send(.move(from: RowRef(from, id: id), to: to), to: table, base: base, ref: ref)
    }

    /// Gives a row a new value (reload).
    @discardableResult
    public func edit(
        _ table: String, at path: RowPath, value: JSONValue, id: String? = nil, base: Base = .replica,
        ref: String? = nil
    ) async throws -> ServerMessage.Ack {
        try await send(.edit(RowRef(path, id: id), value: value), to: table, base: base, ref: ref)
    }

    /// Changes some fields of a row's value with an RFC 7386 merge patch, applied to the value the row has when
    /// the server commits it: fields the patch does not name keep what others committed meanwhile.
    @discardableResult
    public func patch(
        _ table: String, at path: RowPath, patch: JSONValue, id: String? = nil, base: Base = .replica,
        ref: String? = nil
    ) async throws -> ServerMessage.Ack {
        try await send(.patch(RowRef(path, id: id), patch: patch), to: table, base: base, ref: ref)
    }

    /// Several changes at once with `beginUpdates`/`endUpdates` semantics.
    @discardableResult
    public func batch(_ table: String, _ batch: ClientBatch, base: Base = .replica, ref: String? = nil) async throws
        -> ServerMessage.Ack
    {
        try await send(.batch(batch), to: table, base: base, ref: ref)
    }

    /// Presence: editing mode on or off. Answered only when refused (as a ``Event/refusal(_:)``).
    public func setEditing(_ table: String, _ on: Bool) { notify(.editing(table: table, on: on)) }

    /// Presence: a swipe or edit began on a row.
    public func beginEditingRow(_ table: String, row: String) { notify(.beginEditingRow(table: table, row: row)) }

    /// Presence: the swipe or edit on a row ended.
    public func endEditingRow(_ table: String, row: String) { notify(.endEditingRow(table: table, row: row)) }

    private func ack(_ call: Machine.Call, ref: String? = nil) async throws -> ServerMessage.Ack {
        let response = try await request(call, ref: ref)
        guard case .ack(let ack) = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        return ack
    }

    /// Registers a request and waits for its answer. Cancelling the awaiting task stops the wait with
    /// `CancellationError` (an intent already sent may still be applied).
    private func request(_ call: Machine.Call, ref: String? = nil) async throws -> ServerMessage {
        let id = state.withLock { $0.machine.makeRequestID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let cancelled = withState { state in
                    // Checked under the lock that `onCancel` takes, so a cancellation is never missed.
                    if Task.isCancelled { return (true, []) }
                    state.responses[id] = continuation
                    return (false, state.machine.request(id, call, ref: ref))
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            withMachine { $0.cancel(id) }
        }
    }

    private func notify(_ body: ClientMessage.Body) {
        withMachine { $0.notify(body) }
    }
}
