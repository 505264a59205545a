import TableModel
import TablecastProtocol

/// Optimistic edits: intents shown at once in the predicted table, one request in flight per table (what is
/// queued meanwhile goes as one batch when it is answered), rebased on the server's order (see
/// web-client-protocol/optimistic.md), and undo/redo of this client's own changes.
extension TablecastClient {
    /// The table as this client shows it: the replica plus its own pending optimistic intents (the replica
    /// itself before the first one). `nil` when not subscribed.
    public func predicted(_ table: String) -> Table? {
        state.withLock { $0.machine.predicted(table) }
    }

    /// How many optimistic intents on `table` wait for the server (at most
    /// ``OptimisticTable/defaultPendingLimit``, offline included).
    public func pendingIntentCount(_ table: String) -> Int {
        state.withLock { $0.machine.pendingIntentCount(table) }
    }

    /// Whether there is a change of this client's to undo / to redo on `table`.
    public func canUndo(_ table: String) -> Bool { state.withLock { $0.machine.canUndo(table) } }
    public func canRedo(_ table: String) -> Bool { state.withLock { $0.machine.canRedo(table) } }

    /// Applies `intent`, made against ``predicted(_:)`` of a subscribed table, to the predicted table at once
    /// (an ``Event/predicted(table:_:)`` follows) and returns once the server accepted it, with its ack (`nil`
    /// when it turned out to change nothing). Throws the engine's `TableError` when it cannot apply to the
    /// prediction (nothing changes), the server's `ProtocolError` when it refuses it, or a `TableError` when,
    /// queued behind another intent, what it named was deleted meanwhile; a refusal also emits
    /// ``Event/intentRefused(table:intent:code:message:)`` and the prediction springs back. While the connection
    /// is down intents are kept and sent after the resume.
    @discardableResult
    public func perform(_ intent: Intent, on table: String) async throws -> ServerMessage.Ack? {
        try await submit(intent, on: table).answer()
    }

    /// ``perform(_:on:)`` in two steps: the prediction shows the intent when this returns (so that the next
    /// intent can be made against it, as keys typed in a burst are), and the answer is awaited separately.
    /// `ref`: the request's ref when it is sent (by default a fresh one), e.g. for tools that trace updates; an
    /// intent sent within a batch of queued ones goes under the first one's ref.
    public func submit(_ intent: Intent, on table: String, ref: String? = nil) throws -> PendingIntent {
        try optimistic(.submit(intent), on: table, ref: ref)!
    }

    /// Undoes this client's last change on `table` (as a new intent that everyone sees) and returns once the
    /// server accepted it; `false` when there is nothing to undo. Throws `TableError` `conflict` when the step
    /// cannot be undone any more (someone else deleted what it changed); nothing is touched then.
    @discardableResult
    public func undo(_ table: String) async throws -> Bool {
        guard let pending = try submitUndo(table) else { return false }
        _ = try await pending.answer()
        return true
    }

    /// Redoes the last undone change on `table`; like ``undo(_:)``.
    @discardableResult
    public func redo(_ table: String) async throws -> Bool {
        guard let pending = try submitRedo(table) else { return false }
        _ = try await pending.answer()
        return true
    }

    /// ``undo(_:)`` in two steps, like ``submit(_:on:)``; `nil`: nothing to undo.
    public func submitUndo(_ table: String) throws -> PendingIntent? {
        try optimistic(.undo, on: table)
    }

    /// ``redo(_:)`` in two steps, like ``submit(_:on:)``; `nil`: nothing to redo.
    public func submitRedo(_ table: String) throws -> PendingIntent? {
        try optimistic(.redo, on: table)
    }

    /// Makes `edit` in the machine, with a box for its answer; `nil` when it submitted nothing.
    private func optimistic(_ edit: Machine.OptimisticEdit, on table: String, ref: String? = nil) throws
        -> PendingIntent?
    {
        let box = PendingIntent.Box()
        let submitted = withState { state in
            let (submitted, actions) = state.machine.submit(edit, on: table, ref: ref)
            // Registered before the actions are performed, since they may settle it at once.
            if case .success(let waiter?) = submitted { state.answers[waiter] = box }
            return (submitted, actions)
        }
        return try submitted.get().map { _ in PendingIntent(box: box) }
    }
}
