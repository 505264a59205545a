import Synchronization
import TablecastClient
import TablecastProtocol
import WebSocketTransport

/// Writers without the client library, for measuring how many intents a server can take when the load generator
/// shares its machine: each writer is one WebSocket connection that says hello and keeps `window` `edit` intents in
/// flight, sending the next one from the transport's thread as each answer arrives. Intents are pre-shaped text;
/// answers are recognized by scanning for their ref, so a writer costs a send and a receive per intent.
///
/// Only edits are sent: they never change the table's shape, so paths chosen from the shape at the start stay
/// valid without a replica.
final class RawWriters: Sendable {
    private struct Writer {
        var table: String
        var index: Int
        var sequence = 0
        var outstanding = 0
    }

    private struct State {
        var writers: [WebSocketConnectionID: Writer] = [:]
        /// Connections the server welcomed that have not closed (the stats' connection gauge counts them).
        var welcomed: Set<WebSocketConnectionID> = []
        /// Writers neither welcomed nor closed yet, and what ``connect(urls:tables:count:tls:)`` waits on.
        var connecting: Set<WebSocketConnectionID> = []
        var connected: CheckedContinuation<Void, Never>?
        /// Whether ``run(until:)`` started the writers, and when they stop.
        var started = false
        var deadline: ContinuousClock.Instant?
        /// Writers that have not finished (sending stopped and every answer arrived, or the connection closed).
        var active = 0
        var done: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    /// Per table, the sections that have rows and their row counts: where an edit may go.
    private let editableSections: [String: [(section: Int, rows: Int)]]
    private let window: Int
    private let stats: LoadStats
    private let clientPrefix: String
    /// With `--window-until delivery`: when an edit leaves its writer's window.
    private let deliveries: DeliveryWindow?
    private let client = Mutex<WebSocketClient?>(nil)

    /// - Parameters:
    ///   - rowsPerSection: each table's shape (row count of every section), which edits keep.
    ///   - clientPrefix: writers say hello as `<prefix><index>`, so their refs are stored like any client's.
    ///   - deliveries: keeps each edit in the window until every subscriber has it too; nil: until it is acked.
    init(
        rowsPerSection: [String: [Int]], window: Int, stats: LoadStats, clientPrefix: String,
        deliveries: DeliveryWindow?
    ) {
        editableSections = rowsPerSection.mapValues { shape in
            shape.enumerated().filter { $0.element > 0 }.map { (section: $0.offset, rows: $0.element) }
        }
        self.window = window
        self.stats = stats
        self.clientPrefix = clientPrefix
        self.deliveries = deliveries
        deliveries?.setReleaseHandler { [unowned self] id in released(id) }
    }

    /// Connects `count` writers, spread over `tables`, and returns once the server welcomed each (or it closed), so
    /// that the run's clock does not count the connecting. Writer `i` writes to server `i` modulo `urls.count`, so
    /// several nodes share the load.
    func connect(urls: [String], tables: [String], count: Int, tls: ClientTLS) async throws {
        let requests = try urls.map(TablecastClient.parse)
        let client = try WebSocketClient(configuration: .init(maxConnections: count + 8, tls: tls)) { [self] event in
            handle(event)
        }
        self.client.withLock { $0 = client }
        await withCheckedContinuation { continuation in
            state.withLock { state in
                state.connected = continuation
                state.active = count
                for index in 0..<count {
                    let id = client.connect(requests[index % requests.count])
                    state.writers[id] = Writer(table: tables[index % tables.count], index: index)
                    state.connecting.insert(id)
                }
            }
        }
    }

    /// Starts the connected writers, each with its window of edits in flight, and returns once sending stopped (at
    /// `deadline`, or when the stats' budget is spent) and every answer arrived.
    func run(until deadline: ContinuousClock.Instant?) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [WebSocketConnectionID]? in
                guard state.active > 0 else { return nil }
                state.done = continuation
                state.started = true
                state.deadline = deadline
                return Array(state.welcomed)
            }
            guard let ready else { return continuation.resume() }
            for id in ready { start(id) }
        }
        await client.withLock { $0 }?.shutdown()
    }

    /// Fills writer `id`'s window with edits.
    private func start(_ id: WebSocketConnectionID) {
        for _ in 0..<window { sendNext(on: id) }
    }

    /// A writer was welcomed or closed: the last of them ends ``connect(urls:tables:count:tls:)``'s wait.
    private func stoppedConnecting(_ id: WebSocketConnectionID) {
        let connected = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.connecting.remove(id) != nil, state.connecting.isEmpty else { return nil }
            defer { state.connected = nil }
            return state.connected
        }
        connected?.resume()
    }

    /// Runs on the transport's thread.
    private func handle(_ event: WebSocketEvent) {
        switch event {
        case .opened(let info):
            let index = state.withLock { $0.writers[info.id]?.index }
            if let index {
                send("{\"type\":\"hello\",\"client\":\"\(clientPrefix)\(index)\",\"name\":\"raw writer\"}", to: info.id)
            }
        case .message(let id, let message):
            answered(id, message.bytes)
        case .closed(let id, _):
            if state.withLock({ $0.welcomed.remove(id) }) != nil { stats.connections.closed() }
            finish(id, closed: true)
            stoppedConnecting(id)
        }
    }

    /// Answers are read from their bytes: searching them as `String`s went through Foundation's Unicode-aware search,
    /// a quarter of a writer's time.
    private func answered(_ id: WebSocketConnectionID, _ bytes: [UInt8]) {
        if Self.find(#""type":"welcome""#, in: bytes) != nil {
            let (inserted, started) = state.withLock { ($0.welcomed.insert(id).inserted, $0.started) }
            if inserted { stats.connections.opened() }
            // Welcomed after the start (a slow handshake): it starts at once.
            if started { start(id) }
            stoppedConnecting(id)
            return
        }
        // Refs made by `LoadStats` need no unescaping.
        guard let ref = Self.stringMember(#""ref":""#, in: bytes), LoadStats.ref(ref, startsWith: stats.refMarker),
            let sentAt = LoadStats.sendTime(in: ref)
        else {
            // An error that answers no intent (a refused hello): this writer cannot go on.
            if Self.find(#""type":"error""#, in: bytes) != nil {
                stats.recordError(Self.code(in: bytes) ?? "unknown")
                finish(id, closed: true)
                stoppedConnecting(id)
            }
            return
        }
        if Self.find(#""type":"ack""#, in: bytes) != nil {
            let noop = Self.find(#""noop":true"#, in: bytes) != nil
            stats.recordAck(sentAt: sentAt, noop: noop)
            if let deliveries, !noop { return deliveries.answered(ref) }
        } else {
            stats.recordError(Self.code(in: bytes) ?? "unknown")
        }
        // Refused, or a no-op (which commits nothing): no update of it will come, so it leaves the window now.
        if let deliveries, deliveries.refused(ref) == nil { return }
        released(id)
    }

    /// One of `id`'s edits left its window.
    private func released(_ id: WebSocketConnectionID) {
        state.withLock { $0.writers[id]?.outstanding -= 1 }
        sendNext(on: id)
    }

    /// Sends the next edit on `id`, or finishes the writer once the run is over and nothing is outstanding.
    private func sendNext(on id: WebSocketConnectionID) {
        let over = state.withLock { $0.deadline }.map { ContinuousClock.now >= $0 } ?? false
        guard !over, stats.remaining.subtract(1, ordering: .relaxed).newValue >= 0 else {
            return finish(id, closed: false)
        }
        let edit: (text: String, ref: String, table: String)? = state.withLock { state in
            guard var writer = state.writers[id], let sections = editableSections[writer.table], !sections.isEmpty
            else { return nil }
            writer.sequence += 1
            writer.outstanding += 1
            // Spread over the rows by a multiplicative hash of the writer and its sequence: drawing at random from
            // `SystemRandomNumberGenerator` is a system call per number.
            let spread = (UInt64(writer.index) << 32 | UInt64(writer.sequence)) &* 0x9E37_79B9_7F4A_7C15
            let target = sections[Int(spread >> 48) % sections.count]
            let row = Int(truncatingIfNeeded: (spread >> 16) & 0xFFFF_FFFF) % target.rows
            let ref = stats.ref(writer: writer.index, sequence: writer.sequence, sentAt: LoadStats.now())
            state.writers[id] = writer
            let text =
                "{\"type\":\"edit\",\"table\":\"\(writer.table)\",\"at\":[\(target.section),\(row)],"
                + "\"value\":\"\(stats.refMarker)w\(writer.index)-\(writer.sequence)\",\"ref\":\"\(ref)\"}"
            return (text, ref, writer.table)
        }
        guard let edit else { return finish(id, closed: false) }
        deliveries?.sent(edit.ref, table: edit.table, writer: id)
        stats.sent.add(1, ordering: .relaxed)
        send(edit.text, to: id)
    }

    private func send(_ text: String, to id: WebSocketConnectionID) {
        client.withLock { $0 }?.send(WebSocketMessage(text: text), to: id)
    }

    /// A writer is done when its connection closed, or sending stopped and its last answer arrived.
    private func finish(_ id: WebSocketConnectionID, closed: Bool) {
        let done = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let writer = state.writers[id], closed || writer.outstanding == 0 else { return nil }
            state.writers[id] = nil
            state.active -= 1
            guard state.active == 0 else { return nil }
            defer { state.done = nil }
            return state.done
        }
        done?.resume()
    }

    static func code(in bytes: [UInt8]) -> String? { stringMember(#""code":""#, in: bytes) }

    /// The text between `opening` (a member's name, colon and opening quote) and the next quote.
    private static func stringMember(_ opening: StaticString, in bytes: [UInt8]) -> String? {
        guard let start = find(opening, in: bytes), let end = bytes[start...].firstIndex(of: UInt8(ascii: "\""))
        else { return nil }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// The index just after the first occurrence of `needle` in `bytes`. By hand: the standard library's generic
    /// `firstRange(of:)` took about 10 µs to find `"type":"ack"` in an ack, 150 times as long.
    private static func find(_ needle: StaticString, in bytes: [UInt8]) -> Int? {
        let pattern = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard let first = pattern.first else { return 0 }
        var start = 0
        while let index = bytes[start...].firstIndex(of: first), bytes.count - index >= pattern.count {
            if bytes[index..<(index + pattern.count)].elementsEqual(pattern) { return index + pattern.count }
            start = index + 1
        }
        return nil
    }
}
