import Dispatch
import Synchronization
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
    /// `ref`: the request's ref when it is sent (by default a fresh one), e.g. for tools that trace updates.
    public func submit(_ intent: Intent, on table: String, ref: String? = nil) throws -> PendingIntent {
        try optimistic(table, ref: ref) { optimistic throws(TableError) in try optimistic.submit(intent) }!
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
        try optimistic(table) { optimistic throws(TableError) in try optimistic.undo() }
    }

    /// ``redo(_:)`` in two steps, like ``submit(_:on:)``; `nil`: nothing to redo.
    public func submitRedo(_ table: String) throws -> PendingIntent? {
        try optimistic(table) { optimistic throws(TableError) in try optimistic.redo() }
    }

    /// Runs `body` on the table's optimistic state and sends what it says; `nil` when it submitted nothing.
    private func optimistic(
        _ table: String, ref: String? = nil, _ body: (inout OptimisticTable) throws(TableError) -> OptimisticTable.Submission?
    ) throws -> PendingIntent? {
        let box = PendingIntent.Box()
        let result = state.withLock { state -> Result<(Table, Bool)?, any Error> in
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
            if let ref { state.requestedRefs[table, default: [:]][submission.id] = ref }
            if let send = submission.send { transmit(send, table: table, state: &state) }
            if !submission.settled { state.waiters[table, default: [:]][submission.id] = box }
            return .success((optimistic.predicted, submission.settled))
        }
        switch result {
        case .failure(let error): throw error
        case .success(nil): return nil
        case .success(let (predicted, settled)?):
            if settled { box.settle(.success(nil)) }
            emit(.predicted(table: table, predicted))
            return PendingIntent(box: box)
        }
    }

    /// Sends an optimistic intent with a fresh ref (now, or after the next resume when offline).
    private func transmit(_ outgoing: OptimisticTable.Outgoing, table: String, state: inout State) {
        let ref = state.requestedRefs[table]?.removeValue(forKey: outgoing.id) ?? "\(configuration.refPrefix)\(state.nextRef)"
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
            // Nothing was applied: the intent stays in flight and goes again after the next resume or after a
            // delay that grows with each refusal (up to the backoff's maximum). It is never given up: the predicted
            // table shows it, as it shows edits made offline, until the server can store it.
            let attempt = state.withLock { state -> Int? in
                guard state.optimisticRefs[ref] != nil else { return nil }
                state.optimisticUnavailable[ref, default: 0] += 1
                return state.optimisticUnavailable[ref]
            }
            guard let attempt else { return false }
            let delay = configuration.backoff.delay(attempt: attempt)
            let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { self.resendOptimistic(ref) }
            return true
        }
        typealias Answer = (table: String, predicted: Table, resume: [(PendingIntent.Box, Result<ServerMessage.Ack?, any Error>)], refused: [OptimisticTable.Refusal], serverError: ProtocolError?)
        let answer = state.withLock { state -> Answer? in
            guard let table = state.optimisticRefs.removeValue(forKey: ref), var optimistic = state.subscriptions[table]?.optimistic
            else { return nil }
            state.optimisticUnavailable[ref] = nil
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
            var resume: [(PendingIntent.Box, Result<ServerMessage.Ack?, any Error>)] = []
            for id in outcome.accepted + outcome.refused.map(\.id) { state.requestedRefs[table]?.removeValue(forKey: id) }
            for (index, id) in outcome.accepted.enumerated() {
                // The first accepted is the in-flight intent this ack answers; the others changed nothing.
                var answer: ServerMessage.Ack?
                if index == 0, case .ack(let ack) = message { answer = ack }
                if let waiter = state.waiters[table]?.removeValue(forKey: id) { resume.append((waiter, .success(answer))) }
            }
            for (index, refusal) in outcome.refused.enumerated() {
                let error: any Error = index == 0 && serverError != nil ? serverError! : refusal.error
                if let waiter = state.waiters[table]?.removeValue(forKey: refusal.id) { resume.append((waiter, .failure(error))) }
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
        for (waiter, result) in answer.resume { waiter.settle(result) }
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

/// An optimistic intent the predicted table already shows, waiting for the server's answer.
public struct PendingIntent: Sendable {
    /// Where the answer lands, whether or not anyone waits for it yet.
    final class Box: Sendable {
        private let state = Mutex<(result: Result<ServerMessage.Ack?, any Error>?, waiter: CheckedContinuation<ServerMessage.Ack?, any Error>?)>((nil, nil))

        func settle(_ result: Result<ServerMessage.Ack?, any Error>) {
            let waiter = state.withLock { state in
                state.result = result
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(with: result)
        }

        func value() async throws -> ServerMessage.Ack? {
            try await withCheckedThrowingContinuation { continuation in
                let result = state.withLock { state in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let result { continuation.resume(with: result) }
            }
        }
    }

    let box: Box

    /// The server's ack once it accepted the intent (`nil`: it changed nothing); throws its refusal.
    public func answer() async throws -> ServerMessage.Ack? { try await box.value() }
}
