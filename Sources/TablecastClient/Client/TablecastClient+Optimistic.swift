import Dispatch
import TableModel
import TablecastProtocol
import WebSocketTransport

/// Optimistic edits: intents shown at once in the predicted table, sent one at a time per table, rebased on the
/// server's order (see web-client-protocol/optimistic.md), and undo/redo of this client's own changes.
extension TablecastClient {
    /// The table as this client shows it: the replica plus its own pending optimistic intents (the replica
    /// itself before the first one). `nil` when not subscribed.
    public func predicted(_ table: String) -> Table? {
        state.withLock { state in
            guard let subscription = state.subscriptions[table] else { return nil }
            return subscription.optimistic?.predicted ?? subscription.replica?.table
        }
    }

    /// How many optimistic intents on `table` wait for the server (at most
    /// ``OptimisticTable/defaultPendingLimit``, offline included).
    public func pendingIntentCount(_ table: String) -> Int {
        state.withLock { $0.subscriptions[table]?.optimistic?.pendingCount ?? 0 }
    }

    /// Whether there is a change of this client's to undo / to redo on `table`.
    public func canUndo(_ table: String) -> Bool { state.withLock { $0.subscriptions[table]?.optimistic?.canUndo ?? false } }
    public func canRedo(_ table: String) -> Bool { state.withLock { $0.subscriptions[table]?.optimistic?.canRedo ?? false } }

    /// Applies `intent`, made against ``predicted(_:)`` of a subscribed table, to the predicted table at once
    /// (an ``Event/predicted(table:_:)`` follows) and returns once the server accepted it. Throws the engine's
    /// `TableError` when it cannot apply to the prediction (nothing changes), the server's `ProtocolError` when
    /// it refuses it, or a `TableError` when, queued behind another intent, what it named was deleted meanwhile;
    /// a refusal also emits ``Event/intentRefused(table:intent:code:message:)`` and the prediction springs back.
    /// While the connection is down intents are kept and sent after the resume.
    public func perform(_ intent: Intent, on table: String) async throws {
        try await optimistic(table) { optimistic throws(TableError) in try optimistic.submit(intent) }
    }

    /// Undoes this client's last change on `table` (as a new intent that everyone sees) and returns once the
    /// server accepted it; `false` when there is nothing to undo. Throws `TableError` `conflict` when the step
    /// cannot be undone any more (someone else deleted what it changed); nothing is touched then.
    @discardableResult
    public func undo(_ table: String) async throws -> Bool {
        try await optimistic(table) { optimistic throws(TableError) in try optimistic.undo() }
    }

    /// Redoes the last undone change on `table`; like ``undo(_:)``.
    @discardableResult
    public func redo(_ table: String) async throws -> Bool {
        try await optimistic(table) { optimistic throws(TableError) in try optimistic.redo() }
    }

    /// Runs `body` on the table's optimistic state, sends what it says, and waits for the intent's answer.
    /// Returns false when `body` had nothing to submit.
    @discardableResult
    private func optimistic(
        _ table: String, _ body: @escaping @Sendable (inout OptimisticTable) throws(TableError) -> OptimisticTable.Submission?
    ) async throws -> Bool {
        var submitted = true
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result = state.withLock { state -> Result<(Table, settled: Bool)?, any Error> in
                guard var subscription = state.subscriptions[table], let replica = subscription.replica else {
                    return .failure(ProtocolError(.noSuchTable, "not subscribed to \(table)"))
                }
                var optimistic = subscription.optimistic ?? OptimisticTable(confirmed: TableEngine(table: replica.table))
                let submission: OptimisticTable.Submission?
                do {
                    submission = try body(&optimistic)
                } catch {
                    return .failure(error)
                }
                subscription.optimistic = optimistic
                state.subscriptions[table] = subscription
                guard let submission else { return .success(nil) }
                if let send = submission.send { transmit(send, table: table, state: &state) }
                if !submission.settled { state.waiters[table, default: [:]][submission.id] = continuation }
                return .success((optimistic.predicted, submission.settled))
            }
            switch result {
            case .failure(let error): continuation.resume(throwing: error)
            case .success(nil):
                submitted = false
                continuation.resume()
            case .success(let (predicted, settled)?):
                emit(.predicted(table: table, predicted))
                if settled { continuation.resume() }
            }
        }
        return submitted
    }

    /// Sends an optimistic intent with a fresh ref (now, or after the next resume when offline).
    private func transmit(_ outgoing: OptimisticTable.Outgoing, table: String, state: inout State) {
        let ref = "\(configuration.refPrefix)\(state.nextRef)"
        state.nextRef += 1
        state.subscriptions[table]?.inFlightRef = ref
        state.optimisticRefs[ref] = table
        let message = ClientMessage(ref: ref, .intent(table: table, base: outgoing.base, outgoing.intent))
        if state.open, let socket = state.socket { transport.send(message.encoded, to: socket) }
    }

    /// Answers an in-flight optimistic intent from its `ack` or `error`; false when `ref` is not one.
    func answerOptimistic(_ ref: String?, _ message: ServerMessage) -> Bool {
        guard let ref else { return false }
        if case .error(let error) = message, error.code == .unavailable {
            // Nothing was applied: the intent stays in flight and goes again after the next resume or now.
            guard state.withLock({ $0.optimisticRefs[ref] != nil }) else { return false }
            let delay = configuration.backoff.delay(attempt: 1)
            let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { self.resendOptimistic(ref) }
            return true
        }
        typealias Answer = (table: String, predicted: Table, resume: [(CheckedContinuation<Void, any Error>, (any Error)?)], refused: [OptimisticTable.Refusal], serverError: ProtocolError?)
        let answer = state.withLock { state -> Answer? in
            guard let table = state.optimisticRefs.removeValue(forKey: ref), var optimistic = state.subscriptions[table]?.optimistic
            else { return nil }
            state.subscriptions[table]?.inFlightRef = nil
            let outcome: OptimisticTable.Outcome
            var serverError: ProtocolError?
            switch message {
            case .ack(let ack): outcome = optimistic.acknowledge(created: ack.created)
            case .error(let error):
                serverError = error
                let code = TableError.Code(rawValue: error.code.rawValue) ?? .conflict
                outcome = optimistic.refuse(TableError(code, at: error.at, error.message))
            default: return nil
            }
            state.subscriptions[table]?.optimistic = optimistic
            if let send = outcome.send { transmit(send, table: table, state: &state) }
            var resume: [(CheckedContinuation<Void, any Error>, (any Error)?)] = []
            for id in outcome.accepted {
                if let waiter = state.waiters[table]?.removeValue(forKey: id) { resume.append((waiter, nil)) }
            }
            for (index, refusal) in outcome.refused.enumerated() {
                let error: any Error = index == 0 && serverError != nil ? serverError! : refusal.error
                if let waiter = state.waiters[table]?.removeValue(forKey: refusal.id) { resume.append((waiter, error)) }
            }
            return (table, optimistic.predicted, resume, outcome.refused, serverError)
        }
        guard let answer else { return false }
        for (index, refusal) in answer.refused.enumerated() {
            let code = index == 0 ? answer.serverError?.code.rawValue ?? refusal.error.code.rawValue : refusal.error.code.rawValue
            let text = index == 0 ? answer.serverError?.message ?? refusal.error.message : refusal.error.message
            emit(.intentRefused(table: answer.table, intent: refusal.intent, code: code, message: text))
        }
        emit(.predicted(table: answer.table, answer.predicted))
        for (waiter, error) in answer.resume {
            if let error { waiter.resume(throwing: error) } else { waiter.resume() }
        }
        return true
    }

    private func resendOptimistic(_ ref: String) {
        state.withLock { state in
            guard let table = state.optimisticRefs[ref], let outgoing = state.subscriptions[table]?.optimistic?.inFlightIntent,
                state.open, let socket = state.socket
            else { return }
            transport.send(ClientMessage(ref: ref, .intent(table: table, base: outgoing.base, outgoing.intent)).encoded, to: socket)
        }
    }
}
