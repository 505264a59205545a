import Dispatch
import Synchronization
import TableModel
import TablecastProtocol
import WebSocketTransport

/// A connection to a Tablecast server (protocol v1) that keeps replicas of the tables it subscribes to.
///
/// - Says `hello` with a stable client id on every (re)connect, resubscribes with `since` + `epoch` so that only the
///   missed updates are sent, and re-sends every unanswered request, intents with their original `ref` (the server
///   answers a retried intent with its original ack and never applies it twice).
/// - Reconnects after any loss with exponential backoff and jitter, until ``close()``.
/// - Each request is an async call answered by its response (`ack`, `subscribed`, `tables`, …) or thrown as the
///   server's `ProtocolError`. A subscribed client's replica includes its own change when the ack returns.
///
/// ```swift
/// let client = try TablecastClient(configuration: .init(url: "ws://127.0.0.1:8080/", clientID: "laptop-7f3a"))
/// client.connect()
/// let groceries = try await client.subscribe("groceries")
/// let ack = try await client.insert("groceries", at: RowPath(section: 0, row: 0), value: "figs")
/// ```
///
/// Inbound messages are handled on the client's own serial queue (no task per message); the `onEvent` handler
/// runs there too, in order, and should return quickly.
public final class TablecastClient: Sendable, TransportReceiver {
    /// The configuration it was made with.
    public let configuration: Configuration
    let transport: TablecastTransport
    private let ownsTransport: Bool
    /// The servers of ``Configuration/url``, tried in turn: one more after each lost connection.
    private let endpoints: [WebSocketConnectRequest]
    let queue: DispatchQueue
    private let onEvent: (@Sendable (Event) -> Void)?
    let state = Mutex(State())
    private let skippedPresence = Atomic<Int>(0)

    struct Pending {
        var sequence: UInt64
        /// Times the server refused it as `unavailable` (nothing applied): it is retried a few times.
        var retries = 0
        var message: ClientMessage
        var continuation: CheckedContinuation<ServerMessage, any Error>
    }

    struct Subscription {
        var replica: Replica?
        /// The predicted table and this client's pending intents, from its first optimistic intent on.
        var optimistic: OptimisticTable?
        /// The ref the in-flight optimistic intent was sent with.
        var inFlightRef: String?
        /// Set while a snapshot is awaited after the replica fell out of step; updates are ignored meanwhile.
        var resyncing = false
        /// Who is on the table: the state of the last catch-up with every delta since applied.
        var presence: PresenceState?
    }

    struct State {
        var connection: ConnectionState = .idle
        var socket: WebSocketConnectionID?
        /// Whether the current socket has opened (requests are written at once) or not (they wait for it).
        var open = false
        var attempt = 0
        /// The index in `endpoints` of the server to connect to.
        var endpoint = 0
        var closed = false
        var welcomedAs: String?
        var problem: String?
        var nextRef: UInt64 = 0
        var pending: [String: Pending] = [:]
        var subscriptions: [String: Subscription] = [:]
        /// Who waits for each optimistic intent's answer, by table and local id.
        var waiters: [String: [Int: PendingIntent.Box]] = [:]
        /// Refs asked for optimistic intents not sent yet, by table and local id.
        var requestedRefs: [String: [Int: String]] = [:]
        /// The table of each in-flight optimistic intent's ref.
        var optimisticRefs: [String: String] = [:]
        /// Times each in-flight optimistic intent was refused as `unavailable`, for its backoff.
        var optimisticUnavailable: [String: Int] = [:]
        var streams: [Int: AsyncStream<Event>.Continuation] = [:]
        var nextStream = 0
    }

    /// Creates a client; nothing happens until ``connect()``.
    /// - Parameters:
    ///   - configuration: the server's URL and the client's identity.
    ///   - transport: a shared transport for processes with many clients; by default the client makes its own.
    ///   - onEvent: called on the client's queue for each ``Event``, in order (besides ``events()`` streams).
    public init(
        configuration: Configuration, transport: TablecastTransport? = nil,
        onEvent: (@Sendable (Event) -> Void)? = nil
    ) throws {
        self.configuration = configuration
        endpoints = try configuration.url.split(separator: ",").map {
            try Self.parse(String($0.filter { !$0.isWhitespace }))
        }
        guard !endpoints.isEmpty else { throw TablecastClientError.invalidURL(configuration.url) }
        if let transport {
            self.transport = transport
            ownsTransport = false
        } else {
            self.transport = try TablecastTransport(
                configuration: .init(maxMessageSize: TablecastTransport.defaultMaxMessageSize, tls: configuration.tls))
            ownsTransport = true
        }
        queue = DispatchQueue(label: "tablecast.client.\(configuration.clientID)")
        self.onEvent = onEvent
    }

    // MARK: - Connection

    /// Starts connecting (and reconnecting whenever the connection is lost, until ``close()``).
    public func connect() {
        let start = state.withLock { state -> Bool in
            guard case .idle = state.connection, !state.closed else { return false }
            return true
        }
        if start { openSocket() }
    }

    /// Closes the connection for good; pending requests fail with ``TablecastClientError/closed``.
    public func close() async {
        let (socket, pending, streams, waiters) = state.withLock { state in
            state.closed = true
            state.connection = .closed
            defer {
                state.pending = [:]
                state.streams = [:]
                state.waiters = [:]
            }
            return (state.socket, state.pending, state.streams, state.waiters.values.flatMap(\.values))
        }
        if let socket { transport.close(socket) }
        for request in pending.values { request.continuation.resume(throwing: TablecastClientError.closed) }
        for waiter in waiters { waiter.settle(.failure(TablecastClientError.closed)) }
        onEvent?(.state(.closed))
        for stream in streams.values {
            stream.yield(.state(.closed))
            stream.finish()
        }
        if ownsTransport { await transport.shutdown() }
    }

    /// Drops the current connection as if the network had failed; the client reconnects and resumes. For tests
    /// and tools that exercise recovery.
    public func dropConnection() {
        if let socket = state.withLock({ $0.socket }) { transport.close(socket, code: WebSocketCloseCode(rawValue: 4001)) }
    }

    /// The connection state now.
    public var connectionState: ConnectionState { state.withLock { $0.connection } }

    /// Why the last connection attempt failed or the last connection was lost (e.g. `conn fail: ECONNREFUSED`, or
    /// the close code and reason), until the server welcomes the client again; nil while none failed.
    public var connectionProblem: String? { state.withLock { $0.problem } }

    /// The client id the server welcomed this client as (the configured one), once welcomed.
    public var clientID: String? { state.withLock { $0.welcomedAs } }

    /// The replica of a subscribed table, once its snapshot (or resume) arrived.
    public func replica(of table: String) -> Replica? {
        state.withLock { $0.subscriptions[table]?.replica }
    }

    /// Who is on a subscribed table, once its catch-up arrived (nil when ``Configuration/observesPresence`` is off).
    public func presence(of table: String) -> PresenceState? {
        state.withLock { $0.subscriptions[table]?.presence }
    }

    /// `presence` messages received and skipped because ``Configuration/observesPresence`` is off.
    public var skippedPresenceCount: Int { skippedPresence.load(ordering: .relaxed) }

    /// Requests not yet answered (intents waiting for their ack, across reconnects included).
    public var pendingRequestCount: Int { state.withLock { $0.pending.count } }

    /// A stream of every ``Event`` from now on; it ends when the client closes.
    public func events() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let key = state.withLock { state -> Int? in
            if state.closed { return nil }
            state.nextStream += 1
            state.streams[state.nextStream] = continuation
            return state.nextStream
        }
        guard let key else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: key) }
        }
        return stream
    }

    // MARK: - Requests

    /// Subscribes to `table` and returns its replica once caught up. The subscription is renewed (resumed from the
    /// replica's version) after every reconnect until ``unsubscribe(_:)``.
    @discardableResult
    public func subscribe(_ table: String) async throws -> Replica {
        let response = try await request { state in
            let replica = state.subscriptions[table]?.replica
            if state.subscriptions[table] == nil { state.subscriptions[table] = Subscription() }
            return .subscribe(table: table, since: replica?.version, epoch: replica?.epoch)
        }
        guard case .subscribed = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        guard let replica = replica(of: table) else { throw TablecastClientError.unexpectedResponse("no snapshot") }
        return replica
    }

    /// Pull-to-refresh on a subscribed table: the server re-sends what the replica missed (or a snapshot) and
    /// answers `refreshed`; returns the replica then.
    @discardableResult
    public func refresh(_ table: String) async throws -> Replica {
        let response = try await request { state in
            let replica = state.subscriptions[table]?.replica
            return .refresh(table: table, since: replica?.version, epoch: replica?.epoch)
        }
        guard case .refreshed = response, let replica = replica(of: table) else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return replica
    }

    /// Ends the subscription and forgets the replica.
    public func unsubscribe(_ table: String) async throws {
        let waiters = state.withLock { state in Array((state.waiters.removeValue(forKey: table) ?? [:]).values) }
        for waiter in waiters { waiter.settle(.failure(ProtocolError(.noSuchTable, "unsubscribed from \(table)"))) }
        _ = try await request { state in
            state.subscriptions[table] = nil
            return .unsubscribe(table: table)
        }
    }

    /// The tables on the server.
    public func listTables() async throws -> [ServerMessage.TableSummary] {
        let response = try await request { _ in .listTables }
        guard case .tables(_, let tables) = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        return tables
    }

    /// A page of a table's history (read role): the kept changes with versions in `from...to` (nil: from the
    /// oldest kept, to the latest), at most `limit` of them (nil: the server's default, 100), newest or oldest first.
    /// When the range has more, `next` says where the next page starts: pass it as `to` (newest first) or `from`
    /// (oldest first). A version before the oldest kept one is refused with `pruned`.
    public func history(
        _ table: String, from: UInt64? = nil, to: UInt64? = nil, limit: Int? = nil, newestFirst: Bool = true
    ) async throws -> ServerMessage.Changes {
        let response = try await request { _ in .history(table: table, from: from, to: to, limit: limit, newestFirst: newestFirst) }
        guard case .changes(let changes) = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        return changes
    }

    /// The table as it was at `version` (read role), with its current rules. It does not subscribe and leaves the
    /// table's replica alone. A version before the oldest kept one is refused with `pruned`, a future one with
    /// `out_of_range`.
    public func table(_ table: String, atVersion version: UInt64) async throws -> Replica {
        let response = try await request { _ in .snapshotAt(table: table, version: version) }
        guard case .historicalSnapshot(_, let name, let version, let epoch, let rules, let sections) = response else {
            throw TablecastClientError.unexpectedResponse("\(response)")
        }
        return Replica(name: name, epoch: epoch, table: Table(sections: sections, version: version, rules: rules))
    }

    /// Creates a table (admin); the ack carries its epoch.
    @discardableResult
    public func createTable(_ table: String, sections: [SectionContent] = [], rules: RulesPatch = RulesPatch()) async throws
        -> ServerMessage.Ack
    {
        try await ack { _ in .createTable(table: table, sections: sections, rules: rules) }
    }

    /// Drops a table (admin); its subscribers get `dropped`.
    @discardableResult
    public func dropTable(_ table: String) async throws -> ServerMessage.Ack {
        try await ack { _ in .dropTable(table: table) }
    }

    /// Changes some of a table's rules (admin).
    @discardableResult
    public func setRules(_ table: String, _ rules: RulesPatch) async throws -> ServerMessage.Ack {
        try await ack { _ in .setRules(table: table, rules: rules) }
    }

    /// Sends an edit intent and returns its ack (after the replica, when subscribed, holds the change).
    /// - Parameters:
    ///   - base: the version the index paths refer to; by default the replica's.
    ///   - ref: the idempotency key; by default a fresh one. A retry with the same ref is never applied twice.
    @discardableResult
    public func send(_ intent: Intent, to table: String, base: Base = .replica, ref: String? = nil) async throws
        -> ServerMessage.Ack
    {
        try await ack(ref: ref) { state in
            let version: UInt64? =
                switch base {
                case .replica: state.subscriptions[table]?.replica?.version
                case .current: nil
                case .version(let version): version
                }
            return .intent(table: table, base: version, intent)
        }
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
        _ table: String, at path: RowPath, value: JSONValue, id: String? = nil, base: Base = .replica, ref: String? = nil
    ) async throws -> ServerMessage.Ack {
        try await send(.edit(RowRef(path, id: id), value: value), to: table, base: base, ref: ref)
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

    private func ack(ref: String? = nil, _ body: @escaping @Sendable (inout State) -> ClientMessage.Body) async throws
        -> ServerMessage.Ack
    {
        let response = try await request(ref: ref, body)
        guard case .ack(let ack) = response else { throw TablecastClientError.unexpectedResponse("\(response)") }
        return ack
    }

    /// Registers a request under its ref and writes it when the connection is open (otherwise on open). Cancelling
    /// the awaiting task stops the wait with `CancellationError` (an intent already sent may still be applied).
    private func request(ref: String? = nil, _ body: @escaping @Sendable (inout State) -> ClientMessage.Body) async throws
        -> ServerMessage
    {
        let (key, sequence) = state.withLock { state in
            state.nextRef += 1
            return (ref ?? "\(configuration.refPrefix)\(state.nextRef)", state.nextRef)
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let failure = state.withLock { state -> (any Error)? in
                    if state.closed { return TablecastClientError.closed }
                    // Checked under the lock that `onCancel` takes, so a cancellation is never missed.
                    if Task.isCancelled { return CancellationError() }
                    let message = ClientMessage(ref: key, body(&state))
                    state.pending[key] = Pending(sequence: sequence, message: message, continuation: continuation)
                    if state.open, let socket = state.socket { transport.send(message.encoded, to: socket) }
                    return nil
                }
                if let failure { continuation.resume(throwing: failure) }
            }
        } onCancel: {
            let pending = state.withLock { state -> Pending? in
                guard let pending = state.pending.removeValue(forKey: key) else { return nil }
                // A subscription that never got its snapshot ends with its request, as when refused.
                if case .subscribe(let table, _, _) = pending.message.body, state.subscriptions[table]?.replica == nil {
                    state.subscriptions[table] = nil
                }
                return pending
            }
            pending?.continuation.resume(throwing: CancellationError())
        }
    }

    private func notify(_ body: ClientMessage.Body) {
        state.withLock { state in
            if state.open, let socket = state.socket { transport.send(ClientMessage(body).encoded, to: socket) }
        }
    }

    // MARK: - Connection life

    private func openSocket() {
        state.withLock { state in
            guard !state.closed else { return }
            state.open = false
            state.connection = .connecting
            state.socket = transport.connect(endpoints[state.endpoint], receiver: self)
        }
        emit(.state(.connecting))
    }

    /// Called on the transport's thread: hands the event to the client's queue.
    func receive(_ event: WebSocketEvent) {
        // A client without replicas scans updates right here (a cheap walk of the top level, no allocation) rather
        // than hopping to its queue: thousands of counting connections would otherwise cost a dispatch each.
        if !configuration.keepsReplicas, case .message(let id, let message) = event,
            let update = UpdateScanner.scan(message.bytes), state.withLock({ $0.socket == id })
        {
            emit(.updateSeen(table: update.table, version: update.version, originClient: update.originClient, originRef: update.originRef))
            return
        }
        queue.async { self.handle(event) }
    }

    private func handle(_ event: WebSocketEvent) {
        switch event {
        case .opened(let info):
            opened(info.id)
        case .message(let id, let message):
            guard state.withLock({ $0.socket == id }) else { return }
            if !configuration.observesPresence, Self.isPresence(message.bytes) {
                skippedPresence.add(1, ordering: .relaxed)
                return
            }
            let decoded: ServerMessage
            do {
                decoded = try ServerMessage.decode(message.bytes)
            } catch {
                emit(.refusal(ProtocolError(.internal, "undecodable server message: \(error)")))
                return
            }
            handle(decoded)
        case .closed(let id, let frame):
            if frame.code == .tlsHandshakeFailed, state.withLock({ $0.socket == id }) {
                emit(.tlsFailed(reason: frame.reason))
            }
            lost(id, frame)
        }
    }

    /// Hello, resubscriptions resuming each replica, then every unanswered request in its original order.
    private func opened(_ id: WebSocketConnectionID) {
        state.withLock { state in
            guard state.socket == id, !state.closed else { return }
            state.open = true
            let send = { (message: ClientMessage) in self.transport.send(message.encoded, to: id) }
            send(
                ClientMessage(
                    .hello(client: configuration.clientID, name: configuration.name, token: configuration.token)))
            var pendingSubscribes = Set<String>()
            for (ref, pending) in state.pending.sorted(by: { $0.value.sequence < $1.value.sequence }) {
                if case .subscribe(let table, _, _) = pending.message.body {
                    // Resume from where the replica is now, not where it was when first asked.
                    let replica = state.subscriptions[table]?.replica
                    pendingSubscribes.insert(table)
                    state.pending[ref]!.message.body = .subscribe(
                        table: table, since: replica?.version, epoch: replica?.epoch)
                }
            }
            for (table, subscription) in state.subscriptions.sorted(by: { $0.key < $1.key })
            where !pendingSubscribes.contains(table) {
                let replica = subscription.resyncing ? nil : subscription.replica
                send(ClientMessage(.subscribe(table: table, since: replica?.version, epoch: replica?.epoch)))
            }
            for pending in state.pending.values.sorted(by: { $0.sequence < $1.sequence }) { send(pending.message) }
            for (table, subscription) in state.subscriptions.sorted(by: { $0.key < $1.key }) {
                if let ref = subscription.inFlightRef, let outgoing = subscription.optimistic?.inFlightIntent {
                    send(ClientMessage(ref: ref, .intent(table: table, base: outgoing.base, outgoing.intent)))
                }
            }
        }
    }

    private func lost(_ id: WebSocketConnectionID, _ frame: WebSocketCloseFrame) {
        let delay = state.withLock { state -> Duration? in
            guard state.socket == id, !state.closed else { return nil }
            state.problem = frame.reason.isEmpty ? "closed with \(frame.code.rawValue)" : frame.reason
            state.socket = nil
            state.open = false
            state.endpoint = (state.endpoint + 1) % endpoints.count
            let delay = configuration.backoff.delay(attempt: state.attempt)
            state.attempt += 1
            state.connection = .reconnecting(in: delay)
            return delay
        }
        guard let delay else { return }
        emit(.state(.reconnecting(in: delay)))
        let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { self.openSocket() }
    }

    // MARK: - Inbound messages

    private func handle(_ message: ServerMessage) {
        switch message {
        case .welcome(let welcome):
            state.withLock { state in
                state.welcomedAs = welcome.client
                state.problem = nil
                state.attempt = 0
                state.connection = .live
            }
            emit(.state(.live))
        case .update(let update):
            let (replica, predicted) = state.withLock { state -> (Replica?, Table?) in
                guard let subscription = state.subscriptions[update.table], !subscription.resyncing,
                    let version = subscription.replica?.version
                else { return (nil, nil) }
                if update.version <= version { return (nil, nil) }  // already applied (never expected)
                do {
                    // In place: the replica's arrays are uniquely referenced here, so nothing is copied.
                    try state.subscriptions[update.table]!.replica!.apply(update)
                    if subscription.optimistic != nil {
                        let own = update.originClient == state.welcomedAs && update.originRef != nil
                            && update.originRef == subscription.inFlightRef
                        try state.subscriptions[update.table]!.optimistic!.receive(update.batch, own: own)
                    }
                } catch {
                    state.subscriptions[update.table]!.resyncing = true
                    if let socket = state.socket, state.open {
                        transport.send(ClientMessage(.subscribe(table: update.table, since: nil, epoch: nil)).encoded, to: socket)
                    }
                    return (nil, nil)
                }
                let updated = state.subscriptions[update.table]!
                return (updated.replica, updated.optimistic?.predicted)
            }
            if let replica { emit(.update(update, replica)) }
            if let predicted { emit(.predicted(table: update.table, predicted)) }
        case .snapshot(let table, let version, let epoch, let rules, let sections):
            let replica = Replica(name: table, epoch: epoch, table: Table(sections: sections, version: version, rules: rules))
            let stored = state.withLock { state -> Bool in
                guard let subscription = state.subscriptions[table] else { return false }
                var renewed = Subscription(replica: replica, presence: subscription.presence)
                renewed.inFlightRef = subscription.inFlightRef
                if var optimistic = subscription.optimistic {
                    optimistic.replaceConfirmed(with: TableEngine(table: replica.table))
                    renewed.optimistic = optimistic
                }
                state.subscriptions[table] = renewed
                return true
            }
            if stored { emit(.snapshot(replica)) }
        case .subscribed(let ref, let status):
            state.withLock { state in
                guard var subscription = state.subscriptions[status.table] else { return }
                if subscription.replica == nil {
                    // Caught up with nothing to send: the table is still at the resumed version; nothing to do.
                    return
                }
                subscription.replica!.epoch = status.epoch
                subscription.replica!.table.rules = status.rules
                state.subscriptions[status.table] = subscription
            }
            answer(ref, message)
            emit(.subscribed(status))
            replacePresence(status)
        case .refreshed(let ref, let status):
            answer(ref, message)
            replacePresence(status)
        case .rules(let table, let rules):
            state.withLock { state in
                state.subscriptions[table]?.replica?.table.rules = rules
                state.subscriptions[table]?.optimistic?.setRules(rules)
            }
            emit(.rules(table: table, rules: rules))
        case .dropped(let table):
            let waiters = state.withLock { state in
                state.subscriptions[table] = nil
                return Array((state.waiters.removeValue(forKey: table) ?? [:]).values)
            }
            // Optimistic intents still pending on the table can no longer be answered.
            for waiter in waiters { waiter.settle(.failure(ProtocolError(.noSuchTable, "\(table) was dropped"))) }
            emit(.dropped(table: table))
        case .presence(let delta):
            let presence = state.withLock { state -> PresenceState? in
                guard state.subscriptions[delta.table]?.presence != nil else { return nil }
                delta.apply(to: &state.subscriptions[delta.table]!.presence!)
                return state.subscriptions[delta.table]!.presence
            }
            if let presence { emit(.presence(table: delta.table, presence: presence)) }
        case .error(let error):
            if answerOptimistic(error.ref, message) { return }
            if !answer(error.ref, message) { emit(.refusal(error)) }
        case .ack:
            if answerOptimistic(message.ref, message) { return }
            answer(message.ref, message)
        case .unsubscribed, .tables, .changes, .historicalSnapshot:
            answer(message.ref, message)
        }
    }

    /// Takes a subscribed table's presence state from a catch-up's `subscribed` or `refreshed`.
    private func replacePresence(_ status: ServerMessage.TableStatus) {
        guard configuration.observesPresence, let presence = status.presence else { return }
        let stored = state.withLock { state -> Bool in
            guard state.subscriptions[status.table] != nil else { return false }
            state.subscriptions[status.table]!.presence = presence
            return true
        }
        if stored { emit(.presence(table: status.table, presence: presence)) }
    }

    /// Most times a request refused as `unavailable` is retried (the server was shutting down, or could not store
    /// the change; nothing was applied, so a retry with the same ref is safe).
    static let unavailableRetries = 5

    /// Resumes the request `ref` with `message` (thrown when it is an error); false when none was waiting.
    @discardableResult
    private func answer(_ ref: String?, _ message: ServerMessage) -> Bool {
        guard let ref else { return false }
        if case .error(let error) = message, error.code == .unavailable {
            let retry = state.withLock { state -> Int? in
                guard state.pending[ref] != nil, state.pending[ref]!.retries < Self.unavailableRetries else { return nil }
                state.pending[ref]!.retries += 1
                return state.pending[ref]!.retries
            }
            if let retry {
                // Resent after a backoff delay on whatever connection is open then (a reconnect resends it anyway).
                let delay = configuration.backoff.delay(attempt: retry)
                let nanoseconds = delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000
                queue.asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                    self.state.withLock { state in
                        guard let pending = state.pending[ref], state.open, let socket = state.socket else { return }
                        self.transport.send(pending.message.encoded, to: socket)
                    }
                }
                return true
            }
        }
        guard let pending = state.withLock({ $0.pending.removeValue(forKey: ref) }) else { return false }
        if case .error(let error) = message {
            if case .subscribe(let table, _, _) = pending.message.body {
                state.withLock { state in state.subscriptions[table] = nil }
            }
            pending.continuation.resume(throwing: error)
        } else {
            pending.continuation.resume(returning: message)
        }
        return true
    }

    func emit(_ event: Event) {
        onEvent?(event)
        let streams = state.withLock { Array($0.streams.values) }
        for stream in streams { stream.yield(event) }
    }

    private static let presencePrefix = Array(#"{"type":"presence""#.utf8)

    /// Whether a message is a `presence`: the server writes its `type` first. A message of another type that
    /// began this way would need its first member to be `type` with that value, so there are no false positives.
    static func isPresence(_ bytes: [UInt8]) -> Bool {
        bytes.count >= presencePrefix.count && bytes.prefix(presencePrefix.count).elementsEqual(presencePrefix)
    }

    // MARK: - URL

    /// The WebSocket request for a server URL (`ws://host:port/path` or `wss://…`), with the protocol's
    /// subprotocol.
    public static func parse(_ url: String) throws -> WebSocketConnectRequest {
        let usesTLS = url.hasPrefix("wss://")
        guard usesTLS || url.hasPrefix("ws://") else { throw TablecastClientError.invalidURL(url) }
        let rest = url.dropFirst(usesTLS ? 6 : 5)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = rest[slash...].isEmpty ? "/" : String(rest[slash...])
        var host = String(authority)
        var port = usesTLS ? 443 : 80
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let number = Int(authority[authority.index(after: colon)...]), (1...65535).contains(number) else {
                throw TablecastClientError.invalidURL(url)
            }
            port = number
            host = String(authority[..<colon])
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw TablecastClientError.invalidURL(url) }
        return WebSocketConnectRequest(
            host: host, port: port, path: path, subprotocol: "tablecast.v1", usesTLS: usesTLS)
    }
}
