import TableModel
import TablecastProtocol
import TablecastTesting
import WebSocketTransport

@testable import TablecastClient

typealias Machine = ClientStateMachine

/// A ``ClientStateMachine`` driven by hand with a stepped clock: the timers it asks for are kept, and
/// ``advance(by:)`` moves the clock and fires those that fall due, in order. No sockets, no sleeping.
struct MachineHarness {
    var machine: Machine
    /// The stepped clock; its origin is arbitrary.
    private(set) var now = ContinuousClock.now
    /// Timers asked for and not fired yet, with their deadlines.
    private(set) var timers: [(timer: Machine.Timer, deadline: ContinuousClock.Instant)] = []

    /// A client "me" (refs `p-1`, `p-2`, …) of `endpoints` servers, its jitter drawn from a seeded generator;
    /// `tokenProvider` is only called by the shell, so here it only says that there is one. The wall clock stands
    /// at ``wallClock``.
    init(
        endpoints: Int = 1, backoff: Backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1)),
        random: some RandomNumberGenerator & Sendable = SeededGenerator(seed: 20),
        tokenProvider: (@Sendable () async throws -> String)? = nil
    ) {
        var configuration = TablecastClient.Configuration(url: "ws://unused/", clientID: "me", backoff: backoff)
        configuration.refPrefix = "p-"
        configuration.tokenProvider = tokenProvider
        machine = Machine(
            configuration: configuration, endpointCount: endpoints, random: random, wallClock: { Self.wallClock })
    }

    /// The wall clock the machine reads, in seconds since the Unix epoch.
    static let wallClock = 1_800_000_000.0

    /// Feeds one event and keeps the timers it asks for.
    @discardableResult
    mutating func step(_ event: (inout Machine) -> [Machine.Action]) -> [Machine.Action] {
        let actions = event(&machine)
        timers += actions.scheduled
        return actions
    }

    /// Moves the clock by `duration`, firing every timer due by then in deadline order.
    @discardableResult
    mutating func advance(by duration: Duration) -> [Machine.Action] {
        let target = now + duration
        var actions: [Machine.Action] = []
        while let next = timers.indices.filter({ timers[$0].deadline <= target }).min(by: {
            timers[$0].deadline < timers[$1].deadline
        }) {
            let (timer, deadline) = timers.remove(at: next)
            now = deadline
            actions += step { $0.timerFired(timer) }
        }
        now = target
        return actions
    }

    /// Moves the clock to the earliest timer's deadline and fires what falls due then.
    @discardableResult
    mutating func advanceToNextTimer() -> [Machine.Action] {
        guard let deadline = timers.map(\.deadline).min() else { return [] }
        return advance(by: deadline - now)
    }

    /// The socket the machine asked to open last.
    var socket: Machine.SocketID { machine.currentSocket! }

    /// Connects (or, when waiting, lets the reconnect timer fire), opens the socket and welcomes the client.
    @discardableResult
    mutating func goLive() -> [Machine.Action] {
        var actions = machine.connectionState == .idle ? step { $0.connect() } : advanceToNextTimer()
        let socket = self.socket
        actions += step { $0.socketOpened(socket) }
        actions += receive(
            .welcome(
                .init(
                    ref: nil, client: "me", serverName: "test", serverVersion: "1", maxMessageBytes: 1 << 20,
                    maxBatchEntries: 100, intentsPerSecond: 100)))
        return actions
    }

    /// The current socket is lost (or fails to open).
    @discardableResult
    mutating func loseSocket(reason: String = "gone") -> [Machine.Action] {
        let (socket, now) = (self.socket, self.now)
        return step {
            $0.socketClosed(
                socket, WebSocketCloseFrame(code: WebSocketCloseCode(rawValue: 1006), reason: reason), now: now)
        }
    }

    /// A message from the server on the current socket.
    @discardableResult
    mutating func receive(_ message: ServerMessage) -> [Machine.Action] {
        let (socket, now) = (self.socket, self.now)
        return step { $0.receive(message, on: socket, now: now) }
    }

    /// The token provider's answer for `use`.
    @discardableResult
    mutating func give(_ result: Result<String, any Error>, for use: Machine.TokenUse) -> [Machine.Action] {
        let now = self.now
        return step { $0.tokenGiven(result, for: use, now: now) }
    }

    /// Makes a request; returns its id and the actions.
    mutating func request(_ call: Machine.Call, ref: String? = nil) -> (Machine.RequestID, [Machine.Action]) {
        let id = machine.makeRequestID()
        return (id, step { $0.request(id, call, ref: ref) })
    }

    /// Subscribes to `table` and answers with a snapshot at `version` and `subscribed`.
    mutating func subscribe(
        _ table: String, version: UInt64 = 3, epoch: String = "e1", sections: [Section] = Self.letters
    ) {
        let (_, actions) = request(.subscribe(table))
        let ref = actions.sent[0].ref
        receive(.snapshot(table: table, version: version, epoch: epoch, rules: TableRules(), sections: sections))
        receive(.subscribed(ref: ref, status: .init(table: table, version: version, epoch: epoch, rules: TableRules())))
    }

    /// One section `s1` of rows `r1`, `r2`, `r3` holding a, b, c.
    static let letters = [
        Section(id: "s1", rows: ["a", "b", "c"].enumerated().map { Row(id: "r\($0 + 1)", value: .string($1)) })
    ]
}

/// Reading what a list of actions says.
extension [Machine.Action] {
    var commands: [Machine.SocketCommand] { compactMap { if case .socket(let command) = $0 { command } else { nil } } }

    /// The messages sent, in order.
    var sent: [ClientMessage] { commands.compactMap { if case .send(let message, _) = $0 { message } else { nil } } }

    /// The token uses the provider was asked for, in order.
    var tokensAsked: [Machine.TokenUse] { compactMap { if case .fetchToken(let use) = $0 { use } else { nil } } }

    /// The endpoints sockets were opened to, in order.
    var openedEndpoints: [Int] { commands.compactMap { if case .open(_, let endpoint) = $0 { endpoint } else { nil } } }

    var closedSockets: [Machine.SocketID] {
        commands.compactMap { if case .close(let socket, _) = $0 { socket } else { nil } }
    }

    var scheduled: [(timer: Machine.Timer, deadline: ContinuousClock.Instant)] {
        compactMap { if case .schedule(let timer, let deadline) = $0 { (timer, deadline) } else { nil } }
    }

    var resumed: [(id: Machine.RequestID, result: Result<ServerMessage, any Error>)] {
        compactMap { if case .resume(let id, let result) = $0 { (id, result) } else { nil } }
    }

    var settled: [(id: Machine.PendingIntentID, result: Result<ServerMessage.Ack?, any Error>)] {
        compactMap { if case .settle(let id, let result) = $0 { (id, result) } else { nil } }
    }

    var events: [TablecastClient.Event] { compactMap { if case .emit(let event) = $0 { event } else { nil } } }

    var states: [ConnectionState] { events.compactMap { if case .state(let state) = $0 { state } else { nil } } }
}
