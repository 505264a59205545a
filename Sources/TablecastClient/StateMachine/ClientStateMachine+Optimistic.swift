import TableModel
import TablecastProtocol

/// Optimistic intents: shown at once in the predicted table, one request in flight per table (what was queued
/// meanwhile goes as one batch when it is answered; the in-flight one again after each reconnect, with its ref),
/// answered by `ack` or `error`, and never given up while `unavailable`.
extension ClientStateMachine {
    /// Applies `edit` to the predicted table of a subscribed `table` and sends what it says to send. Returns the
    /// waiter of its answer (settled at once when it changes nothing), nil when there was nothing to undo or redo,
    /// or the engine's error (nothing changed).
    mutating func submit(_ edit: OptimisticEdit, on table: String, ref: String? = nil)
        -> (Result<PendingIntentID?, any Error>, [Action])
    {
        guard let replica = subscriptions[table]?.replica else {
            return (.failure(ProtocolError(.noSuchTable, "not subscribed to \(table)")), [])
        }
        // Taken out while it changes, so that its storage is not shared with the copy in the subscription.
        let existing = subscriptions[table]!.optimistic.take()
        var optimistic = existing ?? OptimisticTable(confirmed: TableEngine(table: replica.table))
        let submission: OptimisticTable.Submission?
        do {
            switch edit {
            case .submit(let intent): submission = try optimistic.submit(intent)
            case .undo: submission = try optimistic.undo()
            case .redo: submission = try optimistic.redo()
            }
        } catch {
            subscriptions[table]!.optimistic = existing
            return (.failure(error), [])
        }
        subscriptions[table]!.optimistic = optimistic
        guard let submission else { return (.success(nil), []) }
        let waiter = PendingIntentID(rawValue: nextWaiter)
        nextWaiter += 1
        var actions: [Action] = [.emit(.predicted(table: table, optimistic.predicted))]
        if submission.settled {
            actions.append(.settle(waiter, .success(nil)))
        } else {
            waiters[table, default: [:]][submission.id] = waiter
            if let ref { requestedRefs[table, default: [:]][submission.id] = ref }
        }
        if let send = submission.send { actions += transmit(send, table: table) }
        return (.success(waiter), actions)
    }

    /// Sends an optimistic intent with its requested ref or a fresh one (now, or after the next resume).
    private mutating func transmit(_ outgoing: OptimisticTable.Outgoing, table: String) -> [Action] {
        let ref = requestedRefs[table]?.removeValue(forKey: outgoing.id) ?? makeRef()
        subscriptions[table]?.inFlightRef = ref
        inFlightIntents[ref] = InFlightIntent(table: table)
        guard let socket = openSocket else { return [] }
        return [
            .socket(
                .send(ClientMessage(ref: ref, .intent(table: table, base: outgoing.base, outgoing.intent)), on: socket))
        ]
    }

    /// Answers the in-flight optimistic intent `ref` from its `ack` or `error`; nil when `ref` is not one.
    mutating func answerOptimistic(_ ref: String?, _ message: ServerMessage, now: Instant) -> [Action]? {
        guard let ref, let inFlight = inFlightIntents[ref] else { return nil }
        let table = inFlight.table
        if case .error(let error) = message, error.code == .unavailable {
            // Nothing was applied: the intent stays in flight and goes again after the next resume or after a
            // delay that grows with each refusal (up to the backoff's maximum). It is never given up: the predicted
            // table shows it, as it shows edits made offline, until the server can store it.
            inFlightIntents[ref]!.refusals += 1
            let attempt = inFlightIntents[ref]!.refusals
            let delay = configuration.backoff.delay(attempt: attempt, using: &random)
            return [.schedule(.resendIntent(ref: ref, attempt: attempt), at: now + delay)]
        }
        guard subscriptions[table]?.optimistic != nil else { return nil }
        inFlightIntents[ref] = nil
        subscriptions[table]!.inFlightRef = nil
        let outcome: OptimisticTable.Outcome
        var serverError: ProtocolError?
        switch message {
        case .ack(let ack):
            outcome = subscriptions[table]!.optimistic!.acknowledge(created: ack.created)
        case .error(let error):
            serverError = error
            let code = TableError.Code(rawValue: error.code.rawValue) ?? .conflict
            outcome = subscriptions[table]!.optimistic!.refuse(TableError(code, at: error.at, error.message))
        default:
            return nil
        }
        var actions: [Action] = []
        if let send = outcome.send { actions += transmit(send, table: table) }
        for id in outcome.accepted + outcome.refused.map(\.id) { requestedRefs[table]?.removeValue(forKey: id) }
        let answered = Set(outcome.answered)
        for refusal in outcome.refused {
            // The in-flight intent, when the server refused it: its words, not the engine's.
            let error = answered.contains(refusal.id) ? serverError : nil
            let code = error?.code.rawValue ?? refusal.error.code.rawValue
            actions.append(
                .emit(
                    .intentRefused(
                        table: table, intent: refusal.intent, code: code,
                        message: error?.message ?? refusal.error.message)))
        }
        actions.append(.emit(.predicted(table: table, subscriptions[table]!.optimistic!.predicted)))
        for id in outcome.accepted {
            // The intents the in-flight request carried get its ack; the others changed nothing.
            var answer: ServerMessage.Ack?
            if answered.contains(id), case .ack(var ack) = message {
                if let share = outcome.shares[id] {
                    // One of a batch of queued intents: its own part of the batch's ack.
                    ack.created = share.created
                    ack.resolved = share.sections.map { .number(Double($0)) } + share.rows.map(\.json)
                }
                answer = ack
            }
            if let waiter = waiters[table]?.removeValue(forKey: id) {
                actions.append(.settle(waiter, .success(answer)))
            }
        }
        for refusal in outcome.refused {
            guard let waiter = waiters[table]?.removeValue(forKey: refusal.id) else { continue }
            if answered.contains(refusal.id), let serverError {
                actions.append(.settle(waiter, .failure(serverError)))
            } else {
                actions.append(.settle(waiter, .failure(refusal.error)))
            }
        }
        return actions
    }
}
