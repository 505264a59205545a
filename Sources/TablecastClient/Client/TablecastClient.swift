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
/// runs there too, in order, and should return quickly. A load generator can have them handled on the transport's
/// thread instead (``Configuration/handlesOnTransportThread``, ``Configuration/keepsReplicas`` off).
public final class TablecastClient: Sendable {
    /// The configuration it was made with.
    public let configuration: Configuration
    let transport: TablecastTransport
    private let ownsTransport: Bool
    /// The servers of ``Configuration/url``, tried in turn: one more after each lost connection.
    let endpoints: [WebSocketConnectRequest]
    /// Where inbound events and timers run.
    let queue: DispatchQueue
    let onEvent: (@Sendable (Event) -> Void)?
    /// Every decision is the machine's (see ``ClientStateMachine``); this class performs what it says.
    let state: Mutex<ShellState>
    /// The transport's connection for the machine's latest socket; used only by the thread writing commands.
    let transportConnection = Mutex<(socket: ClientStateMachine.SocketID, connection: WebSocketConnectionID)?>(nil)
    let streams = EventStreams()
    let skippedPresence = Atomic<Int>(0)

    /// Creates a client; nothing happens until ``connect()``.
    /// - Parameters:
    ///   - configuration: the server's URL and the client's identity.
    ///   - transport: a shared transport for processes with many clients; by default the client makes its own.
    ///   - onEvent: called on the client's queue for each ``Event``, in order (besides ``events()`` streams); see
    ///     ``Configuration/handlesOnTransportThread`` for the exception.
    public init(
        configuration: Configuration, transport: TablecastTransport? = nil,
        onEvent: (@Sendable (Event) -> Void)? = nil
    ) throws {
        self.configuration = configuration
        endpoints = try configuration.url.split(separator: ",").map {
            var request = try Self.parse(String($0.filter { !$0.isWhitespace }))
            request.localAddress = configuration.localAddress
            return request
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
        state = Mutex(
            ShellState(machine: ClientStateMachine(configuration: configuration, endpointCount: endpoints.count)))
    }

    /// Starts connecting (and reconnecting whenever the connection is lost, until ``close()``).
    public func connect() {
        withMachine { $0.connect() }
    }

    /// Closes the connection for good; pending requests fail with ``TablecastClientError/closed``.
    public func close() async {
        withMachine { $0.close() }
        streams.finish()
        if ownsTransport { await transport.shutdown() }
    }

    /// Drops the current connection as if the network had failed: closed with 4001, or `abruptly` its socket shut
    /// down without a close frame. The client reconnects and resumes. For tests and tools that exercise recovery.
    public func dropConnection(abruptly: Bool = false) {
        withMachine { $0.dropConnection(abruptly: abruptly) }
    }

    /// The connection state now.
    public var connectionState: ConnectionState { state.withLock { $0.machine.connectionState } }

    /// Why the last connection attempt failed or the last connection was lost (e.g. `conn fail: ECONNREFUSED`, or
    /// the close code and reason), until the server welcomes the client again; nil while none failed.
    public var connectionProblem: String? { state.withLock { $0.machine.problem } }

    /// The client id the server welcomed this client as (the configured one), once welcomed.
    public var clientID: String? { state.withLock { $0.machine.welcomedAs } }

    /// The server's software and version (`tablecast`, `1.0.0`) as its welcome said, once welcomed.
    public var server: (name: String, version: String)? { state.withLock { $0.machine.server } }

    /// The replica of a subscribed table, once its snapshot (or resume) arrived.
    public func replica(of table: String) -> Replica? {
        state.withLock { $0.machine.replica(of: table) }
    }

    /// Who is on a subscribed table, once its catch-up arrived (nil when ``Configuration/observesPresence`` is off).
    public func presence(of table: String) -> PresenceState? {
        state.withLock { $0.machine.presence(of: table) }
    }

    /// `presence` messages received and skipped because ``Configuration/observesPresence`` is off.
    public var skippedPresenceCount: Int { skippedPresence.load(ordering: .relaxed) }

    /// Requests not yet answered (intents waiting for their ack, across reconnects included).
    public var pendingRequestCount: Int { state.withLock { $0.machine.requests.count } }

    /// A stream of every ``Event`` from now on; it ends when the client closes.
    public func events() -> AsyncStream<Event> { streams.makeStream() }
}
