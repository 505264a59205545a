import TableModel
import TablecastProtocol

/// Requests: registered under an id, written when the connection is open (again after each reconnect, with the
/// same ref), answered by the response with their ref, retried a few times when refused as `unavailable`.
extension ClientStateMachine {
    /// The id of the next request; its default ref carries the same number.
    mutating func makeRequestID() -> RequestID {
        nextRef += 1
        return RequestID(rawValue: nextRef)
    }

    /// Registers request `id` (from ``makeRequestID()``) and writes it if the connection is open. `ref`: the
    /// idempotency key asked for; by default one made from the id.
    mutating func request(_ id: RequestID, _ call: Call, ref: String? = nil) -> [Action] {
        if isClosed { return [.resume(id, .failure(TablecastClientError.closed))] }
        var actions: [Action] = []
        let body: ClientMessage.Body
        switch call {
        case .subscribe(let table):
            let replica = subscriptions[table]?.replica
            if subscriptions[table] == nil { subscriptions[table] = Subscription() }
            body = .subscribe(table: table, since: replica?.version, epoch: replica?.epoch)
        case .refresh(let table):
            let replica = subscriptions[table]?.replica
            body = .refresh(table: table, since: replica?.version, epoch: replica?.epoch)
        case .unsubscribe(let table):
            actions = endSubscription(table, failing: ProtocolError(.noSuchTable, "unsubscribed from \(table)"))
            body = .unsubscribe(table: table)
        case .intent(let table, let base, let intent):
            let version: UInt64? =
                switch base {
                case .replica: subscriptions[table]?.replica?.version
                case .current: nil
                case .version(let version): version
                }
            body = .intent(table: table, base: version, intent)
        case .plain(let plain):
            body = plain
        }
        let ref = ref ?? "\(configuration.refPrefix)\(id.rawValue)"
        let message = ClientMessage(ref: ref, body)
        requests[id] = Request(ref: ref, message: message)
        requestRefs[ref] = id
        if let socket = openSocket { actions.append(.socket(.send(message, on: socket))) }
        return actions
    }

    /// Stops waiting for request `id`, which fails with `CancellationError` (an intent already sent may still be
    /// applied); nothing when it was answered already.
    mutating func cancel(_ id: RequestID) -> [Action] {
        guard let request = removeRequest(id) else { return [] }
        // A subscription that never got its snapshot ends with its request, as when refused.
        if case .subscribe(let table, _, _) = request.message.body, subscriptions[table]?.replica == nil {
            subscriptions[table] = nil
        }
        return [.resume(id, .failure(CancellationError()))]
    }

    /// Writes a message that is not answered unless refused (presence), if the connection is open.
    func notify(_ body: ClientMessage.Body) -> [Action] {
        guard let socket = openSocket else { return [] }
        return [.socket(.send(ClientMessage(body), on: socket))]
    }

    /// Answers the request waiting for `ref` with `message` (a failure when it is an error); nil when none waits.
    /// An `unavailable` refusal is retried after a backoff delay instead, up to ``unavailableRetries`` times.
    mutating func answer(_ ref: String?, _ message: ServerMessage, now: Instant) -> [Action]? {
        guard let ref, let id = requestRefs[ref] else { return nil }
        if case .error(let error) = message, error.code == .unavailable,
            requests[id]!.retries < Self.unavailableRetries
        {
            requests[id]!.retries += 1
            let retries = requests[id]!.retries
            let delay = configuration.backoff.delay(attempt: retries, using: &random)
            return [.schedule(.retryRequest(id, attempt: retries), at: now + delay)]
        }
        let request = removeRequest(id)!
        guard case .error(let error) = message else { return [.resume(id, .success(message))] }
        var actions: [Action] = []
        if case .subscribe(let table, _, _) = request.message.body {
            actions = endSubscription(table, failing: error)
        }
        actions.append(.resume(id, .failure(error)))
        return actions
    }

    private mutating func removeRequest(_ id: RequestID) -> Request? {
        guard let request = requests.removeValue(forKey: id) else { return nil }
        if requestRefs[request.ref] == id { requestRefs[request.ref] = nil }
        return request
    }

    /// Forgets a table's subscription; its optimistic intents still waiting fail with `error`, since nothing
    /// will answer them now.
    mutating func endSubscription(_ table: String, failing error: ProtocolError) -> [Action] {
        subscriptions[table] = nil
        requestedRefs[table] = nil
        inFlightIntents = inFlightIntents.filter { $0.value.table != table }
        let waiting = waiters.removeValue(forKey: table) ?? [:]
        return waiting.sorted(by: { $0.key < $1.key }).map { .settle($0.value, .failure(error)) }
    }
}
