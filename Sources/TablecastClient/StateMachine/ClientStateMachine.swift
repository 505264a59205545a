import TableModel
import TablecastProtocol
import WebSocketTransport

/// What a ``TablecastClient`` knows and decides, as a value: its connection across several URLs, its requests and
/// their retries, its subscriptions with their replicas, optimistic intents and presence.
///
/// Each mutating method takes one event (connect asked, socket opened or closed, message received, request made,
/// timer fired, close asked) and returns the ``Action``s it calls for: socket commands, timers to schedule,
/// answers to resume, events to report. It performs none of them and never reads a clock: `now` comes with the
/// events that schedule timers, and the jitter's randomness is injected. Its tests drive it step by step.
struct ClientStateMachine: Sendable {
    typealias Instant = ContinuousClock.Instant

    /// Where the connection stands.
    enum Link: Sendable {
        /// Before ``connect()``.
        case idle
        /// Asked to open; nothing is written until it opens.
        case opening(SocketID)
        /// Open and said hello; requests are written at once. `welcomed` once the server answered hello.
        case open(SocketID, welcomed: Bool)
        /// Lost; the next attempt starts when ``Timer/reconnect(after:)`` fires.
        case waiting(after: SocketID, delay: Duration)
        /// Closed for good.
        case closed
    }

    /// An awaited request.
    struct Request: Sendable {
        var ref: String
        var message: ClientMessage
        /// Times the server refused it as `unavailable` (nothing applied): it is retried a few times.
        var retries = 0
    }

    /// An optimistic intent sent and not answered yet.
    struct InFlightIntent: Sendable {
        var table: String
        /// Times it was refused as `unavailable`, for its backoff.
        var refusals = 0
    }

    /// Most times a request refused as `unavailable` is retried (the server was shutting down, or could not store
    /// the change; nothing was applied, so a retry with the same ref is safe).
    static let unavailableRetries = 5

    let configuration: TablecastClient.Configuration
    /// How many servers ``TablecastClient/Configuration/url`` names; they are tried in turn.
    let endpointCount: Int
    /// Draws the reconnect and retry delays' jitter.
    var random: any RandomNumberGenerator & Sendable
    /// Seconds since the Unix epoch, which a signed token's `exp` counts in.
    let wallClock: @Sendable () -> Double

    private(set) var link = Link.idle
    /// Consecutive failed connections, for the backoff; reset by a welcome.
    private(set) var attempt = 0
    /// The index of the server the next socket opens to.
    private(set) var endpoint = 0
    private var nextSocket = 0
    /// The client id the server welcomed this client as.
    private(set) var welcomedAs: String?
    /// The server's software and version, as its last welcome said.
    private(set) var server: (name: String, version: String)?
    /// Why the last connection attempt failed or the last connection was lost, until the next welcome.
    private(set) var problem: String?
    /// Numbers requests and the refs made for them.
    var nextRef: UInt64 = 0
    var requests: [RequestID: Request] = [:]
    /// The request waiting for each ref.
    var requestRefs: [String: RequestID] = [:]
    var subscriptions: [String: Subscription] = [:]
    /// Who waits for each optimistic intent's answer, by table and local id.
    var waiters: [String: [Int: PendingIntentID]] = [:]
    var nextWaiter = 0
    /// Refs asked for optimistic intents not sent yet, by table and local id.
    var requestedRefs: [String: [Int: String]] = [:]
    /// The in-flight optimistic intents, by ref.
    var inFlightIntents: [String: InFlightIntent] = [:]
    /// The token hello sends: the configured one, or the token provider's latest.
    var token: String?
    /// The `refreshToken` awaiting its ack: its ref and the token it sends.
    var tokenRefresh: (ref: String, token: String)?

    /// - Parameters:
    ///   - configuration: the client's identity, backoff, ref prefix and whether it observes presence.
    ///   - endpointCount: how many servers there are to try in turn (at least one).
    ///   - random: draws the jitter of reconnect and retry delays.
    ///   - wallClock: seconds since the Unix epoch, for when a signed token is refreshed.
    init(
        configuration: TablecastClient.Configuration, endpointCount: Int,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        wallClock: @escaping @Sendable () -> Double = Self.systemWallClock
    ) {
        precondition(endpointCount > 0, "a client needs a server to connect to")
        self.configuration = configuration
        self.endpointCount = endpointCount
        self.random = random
        self.wallClock = wallClock
        token = configuration.token
    }

    // MARK: - Queries

    /// The socket that is opening or open, whose events count; nil while waiting, idle or closed.
    var currentSocket: SocketID? {
        switch link {
        case .opening(let socket), .open(let socket, _): socket
        case .idle, .waiting, .closed: nil
        }
    }

    /// The socket requests are written to now; nil until it opened.
    var openSocket: SocketID? {
        if case .open(let socket, _) = link { socket } else { nil }
    }

    var isClosed: Bool {
        if case .closed = link { true } else { false }
    }

    /// The public view of ``link``.
    var connectionState: ConnectionState {
        switch link {
        case .idle: .idle
        case .opening, .open(_, welcomed: false): .connecting
        case .open(_, welcomed: true): .live
        case .waiting(_, let delay): .reconnecting(in: delay)
        case .closed: .closed
        }
    }

    /// Whether an event of `socket` still counts (it is the current one).
    func accepts(_ socket: SocketID) -> Bool { currentSocket == socket }

    // MARK: - Connection events

    /// Starts connecting, unless already started or closed.
    mutating func connect() -> [Action] {
        guard case .idle = link else { return [] }
        return openNextSocket()
    }

    private mutating func openNextSocket() -> [Action] {
        let socket = SocketID(rawValue: nextSocket)
        nextSocket += 1
        link = .opening(socket)
        return [.socket(.open(socket, endpoint: endpoint)), .emit(.state(.connecting))]
    }

    /// The socket opened: hello (once the token provider, if any, gave a token: see ``tokenGiven(_:for:now:)``),
    /// resubscriptions resuming each replica, then every unanswered request in its original order, optimistic
    /// intents in flight last, all with their original refs.
    mutating func socketOpened(_ socket: SocketID) -> [Action] {
        guard case .opening(socket) = link else { return [] }
        link = .open(socket, welcomed: false)
        if configuration.tokenProvider != nil { return [.fetchToken(.hello(socket))] }
        return greet(socket)
    }

    /// Hello and everything the server is to hear again on a new connection.
    mutating func greet(_ socket: SocketID) -> [Action] {
        let hello = ClientMessage(.hello(client: configuration.clientID, name: configuration.name, token: token))
        var messages = [hello]
        let ordered = requests.keys.sorted()
        var pendingSubscribes = Set<String>()
        for id in ordered {
            if case .subscribe(let table, _, _) = requests[id]!.message.body {
                // Resume from where the replica is now, not where it was when first asked.
                let replica = subscriptions[table]?.replica
                pendingSubscribes.insert(table)
                requests[id]!.message.body = .subscribe(table: table, since: replica?.version, epoch: replica?.epoch)
            }
        }
        for (table, subscription) in subscriptions.sorted(by: { $0.key < $1.key })
        where !pendingSubscribes.contains(table) {
            let replica = subscription.resyncing ? nil : subscription.replica
            messages.append(ClientMessage(.subscribe(table: table, since: replica?.version, epoch: replica?.epoch)))
        }
        messages += ordered.map { requests[$0]!.message }
        for (table, subscription) in subscriptions.sorted(by: { $0.key < $1.key }) {
            if let ref = subscription.inFlightRef, let outgoing = subscription.optimistic?.inFlightIntent {
                messages.append(ClientMessage(ref: ref, .intent(table: table, base: outgoing.base, outgoing.intent)))
            }
        }
        return messages.map { .socket(.send($0, on: socket)) }
    }

    /// The socket closed or failed to open: wait (backoff with jitter) and try the next server.
    mutating func socketClosed(_ socket: SocketID, _ frame: WebSocketCloseFrame, now: Instant) -> [Action] {
        guard accepts(socket) else { return [] }
        var actions: [Action] = []
        if frame.code == .tlsHandshakeFailed { actions.append(.emit(.tlsFailed(reason: frame.reason))) }
        problem = frame.reason.isEmpty ? "closed with \(frame.code.rawValue)" : frame.reason
        endpoint = (endpoint + 1) % endpointCount
        let delay = configuration.backoff.delay(attempt: attempt, using: &random)
        attempt += 1
        link = .waiting(after: socket, delay: delay)
        tokenRefresh = nil
        actions.append(.emit(.state(.reconnecting(in: delay))))
        actions.append(.schedule(.reconnect(after: socket), at: now + delay))
        return actions
    }

    /// Closes the current socket as if the network had failed (code 4001, or `abruptly` without a close frame);
    /// the client reconnects and resumes.
    func dropConnection(abruptly: Bool = false) -> [Action] {
        guard let socket = currentSocket else { return [] }
        return [.socket(abruptly ? .abort(socket) : .close(socket, code: WebSocketCloseCode(rawValue: 4001)))]
    }

    /// Closes for good: the socket closes, every awaited request and optimistic intent fails with
    /// ``TablecastClientError/closed``, and later events change nothing.
    mutating func close() -> [Action] {
        if isClosed { return [] }
        var actions: [Action] = []
        if let socket = currentSocket { actions.append(.socket(.close(socket, code: .normalClosure))) }
        link = .closed
        for id in requests.keys.sorted() { actions.append(.resume(id, .failure(TablecastClientError.closed))) }
        requests = [:]
        requestRefs = [:]
        for table in waiters.keys.sorted() {
            for (_, waiter) in waiters[table]!.sorted(by: { $0.key < $1.key }) {
                actions.append(.settle(waiter, .failure(TablecastClientError.closed)))
            }
        }
        waiters = [:]
        actions.append(.emit(.state(.closed)))
        return actions
    }

    /// A timer asked for earlier fired; it does nothing when what it was for is gone.
    mutating func timerFired(_ timer: Timer) -> [Action] {
        switch timer {
        case .reconnect(let socket):
            guard case .waiting(socket, _) = link else { return [] }
            return openNextSocket()
        case .retryRequest(let id, let attempt):
            // Sent on whatever connection is open now (a reconnect sends it anyway).
            guard let request = requests[id], request.retries == attempt, let socket = openSocket else { return [] }
            return [.socket(.send(request.message, on: socket))]
        case .refreshToken(let socket):
            guard openSocket == socket else { return [] }
            return [.fetchToken(.refresh(socket))]
        case .resendIntent(let ref, let attempt):
            guard let inFlight = inFlightIntents[ref], inFlight.refusals == attempt, let socket = openSocket,
                let outgoing = subscriptions[inFlight.table]?.optimistic?.inFlightIntent
            else { return [] }
            let message = ClientMessage(ref: ref, .intent(table: inFlight.table, base: outgoing.base, outgoing.intent))
            return [.socket(.send(message, on: socket))]
        }
    }

    /// Records the welcome that answers hello: the connection is live and the backoff starts over.
    mutating func welcomed(_ welcome: ServerMessage.Welcome, now: Instant) -> [Action] {
        guard case .open(let socket, _) = link else { return [] }
        link = .open(socket, welcomed: true)
        welcomedAs = welcome.client
        server = (welcome.serverName, welcome.serverVersion)
        problem = nil
        attempt = 0
        return [.emit(.state(.live))] + scheduleTokenRefresh(on: socket, now: now)
    }

    /// A fresh ref for a request or an optimistic intent: the prefix unique to this instance and a number.
    mutating func makeRef() -> String {
        nextRef += 1
        return "\(configuration.refPrefix)\(nextRef)"
    }
}
