import CLibWebSockets
import DequeModule
import Foundation
import Logging
import MemoryBudget
import Synchronization

/// One libwebsockets context and the thread that services it.
///
/// lws runs on a libev loop that this class creates with the epoll backend and passes to lws as a foreign loop:
/// lws' own poll() loop scans every descriptor on every wakeup, which made a thousand idle connections cost more
/// than the messages of the busy ones. Owning the loop also lets the service thread break it to stop.
///
/// libwebsockets' rule: only the service thread touches lws objects. Other threads append a `ServiceCommand` to
/// the locked inbox and wake the loop with `lws_cancel_service` (only when the inbox was empty: wakes coalesce);
/// the service thread drains the inbox in `LWS_CALLBACK_EVENT_WAIT_CANCELLED`. Everything below `MARK: Service
/// thread` is touched only by that thread.
final class ServiceLoop: @unchecked Sendable {
    enum Role: Sendable {
        case server(HTTPRouter)
        case client
    }

    let role: Role
    let limits: ConnectionLimits
    /// Server role: open WebSocket connections beyond which upgrades are refused.
    let maxConnections: Int
    let handler: WebSocketEventHandler
    let metrics: TransportMetrics?
    let logger: Logger
    /// Connections' outbound queues are counted in its outbound account, their inbound backlogs and the messages
    /// they are assembling in its inbound account.
    let budget: MemoryBudget
    /// Client role: how `wss://` connections verify servers.
    let clientTLS: ClientTLS
    /// Set once in `init`, before the service thread starts; never reassigned.
    private(set) var context: OpaquePointer!
    /// The libev loop lws runs on (the server's readers too); destroyed by the service thread after the context.
    let eventLoop: UnsafeMutableRawPointer
    /// What a connection's reader receives into (service thread only).
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// The listening port (server role), read back from lws so that port 0 reports the ephemeral port.
    private(set) var port = 0

    private struct Inbox {
        var commands: [ServiceCommand] = []
        /// False once the context is being destroyed: nothing may wake it any more.
        var open = true
    }

    private let inbox = Mutex(Inbox())
    /// Per connection, inbound messages delivered and not yet consumed (with inbound flow control).
    private let backlogs = Mutex<[WebSocketConnectionID: InboundBacklog]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Outbound messages not yet written: those handed to `send` and not taken up by the service thread yet, and
    /// those queued on connections, counting at most ``Connection/backlogWeightCap`` per connection so that readers
    /// that stopped reading weigh little. How far the service thread is behind with its fan-out.
    /// The thread allowed to touch lws objects (`pthread_self`): the one creating the context until the service
    /// thread starts (lws calls back during creation), then the service thread. Checked in debug builds at every
    /// callback's entry.
    private let serviceThread = Atomic<UInt>(UInt(pthread_self()))

    /// Whether the caller is the thread allowed to touch lws objects.
    var isOnServiceThread: Bool { serviceThread.load(ordering: .acquiring) == UInt(pthread_self()) }

    let outboundBacklog = Atomic<Int>(0)
    /// Connections registered (open, or in their handshake).
    let connectionCount = Atomic<Int>(0)
    private let termination = Mutex<(done: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    let storage: ContextStorage

    // MARK: Service thread

    private(set) var connections: [WebSocketConnectionID: Connection] = [:]
    /// Server role: API requests handed to the application and not yet done with (see ``HTTPExchange``).
    var exchanges: [WebSocketConnectionID: HTTPExchange] = [:]
    /// Server role: stalled handshakes per peer address.
    var handshakeGate: HandshakeGate
    /// The offset of a connection's input buflist in lws' connection struct (see
    /// `inputBuflistOffset(_:)`), once looked for; nil when it was not found.
    var buflistOffset: Int?
    var buflistOffsetSought = false
    /// A scan for the biggest outbound holders could not bring the outbound account within its share (see
    /// `shedOutbound`); none is made again until this loop's queues give bytes back.
    var outboundSheddingStuck = false
    private var draining = false
    /// Client role: the keys its frames are masked with.
    private var maskingKeys = MaskingKeys()
    /// Several queued messages framed into one write (both roles); client role: a copy of a message lws writes,
    /// because lws masks client payloads in place.
    private var scratch = UnsafeMutableRawPointer.allocate(byteCount: 4096, alignment: 16)
    private var scratchCapacity = 4096
    /// When idle connections are pinged and hung up on (see ``sweepIdleConnections(at:)``).
    private let idlePolicy: Liveness.Policy
    /// When the next idle sweep is due (uptime, ns).
    private var nextIdleSweep: UInt64 = 0
    /// Server role: when each event stream writes its next heartbeat (see ``writeDueHeartbeats(at:)``).
    var heartbeatsDue: DeadlineQueue<WebSocketConnectionID>
    /// Server role: when each API exchange's answer is overdue (see ``answerOverdueExchanges(at:)``).
    var answersDue: DeadlineQueue<WebSocketConnectionID>
    /// Connections to close before the loop next waits (see ``closeSoon(_:)``).
    private var closing: [WebSocketConnectionID] = []
    /// Connections whose queues the commands being processed filled from empty: written once they all are (see
    /// ``Connection/flush()``).
    var unflushed: [Connection] = []
    /// When each lingering connection's lingering ends (see ``endLinger(of:)``).
    private var lingerEnds = DeadlineQueue<WebSocketConnectionID>(span: .seconds(Connection.lingerSeconds))
    /// When each slow reader being closed is cut off (see ``cutOffAfterSlowClose(of:)``).
    private var slowCloseEnds: DeadlineQueue<WebSocketConnectionID>
    /// Server role: HTTP connections waiting for their next request (see ``keepAlive(_:)``).
    var idleKeepAlives: IdleKeepAlives

    init(
        role: Role, settings: ContextSettings, limits: ConnectionLimits, budget: MemoryBudget = .unlimited,
        metrics: TransportMetrics?, logger: Logger, handler: @escaping WebSocketEventHandler
    ) throws {
        self.role = role
        self.limits = limits
        self.budget = budget
        maxConnections = settings.maxConnections
        handshakeGate = HandshakeGate(maxPerAddress: settings.maxHandshakesPerAddress)
        self.metrics = metrics
        self.logger = logger
        self.handler = handler
        clientTLS = settings.clientTLS
        idlePolicy = Liveness.Policy(
            pingAfterSeconds: settings.pingAfterIdleSeconds, hangUpAfterSeconds: settings.hangUpAfterIdleSeconds)
        // Without an API neither queue is used. A heartbeat is at least a microsecond: one due again at once would
        // never let the loop go on.
        let api: HTTPAPI? = if case .server(let router) = role { router.api } else { nil }
        heartbeatsDue = DeadlineQueue(span: max(.microseconds(1), api?.heartbeat ?? .zero))
        answersDue = DeadlineQueue(span: api?.answerTimeout ?? .zero)
        slowCloseEnds = DeadlineQueue(span: .seconds(limits.slowConsumerCloseSeconds))
        idleKeepAlives = IdleKeepAlives(timeout: .seconds(settings.httpIdleTimeoutSeconds))
        LibWebSocketsLog.install(logger)
        storage = ContextStorage(settings: settings, isServer: settings.port != nil)

        guard let eventLoop = CLibWebSockets_newEpollLoop() else {
            throw WebSocketTransportError.contextCreationFailed.with(message: "libev could not create an epoll loop")
        }
        self.eventLoop = eventLoop
        var info = storage.creationInfo
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.options |= CLibWebSockets_libevOption()
        var loops: [UnsafeMutableRawPointer?] = [eventLoop]
        let created = loops.withUnsafeMutableBufferPointer { loops in
            info.foreign_loops = loops.baseAddress
            return lws_create_context(&info)
        }
        guard let context = created else {
            CLibWebSockets_destroyLoop(eventLoop)
            throw (settings.port == nil ? WebSocketTransportError.contextCreationFailed : .listenFailed)
                .with(
                    message: "libwebsockets could not create its context (port \(settings.port ?? -1) in use? "
                        + "libwebsockets-evlib-ev not installed?)")
        }
        self.context = context
        if settings.port != nil, let vhost = lws_get_vhost_by_name(context, ContextStorage.vhostName) {
            port = Int(lws_get_vhost_listen_port(vhost))
        }
        let thread = Thread { [self] in
            serviceThread.store(UInt(pthread_self()), ordering: .releasing)
            run()
        }
        thread.name = "lws-service"
        thread.start()
    }

    deinit {
        scratch.deallocate()
        readBuffer.deallocate()
    }

    func makeConnectionID() -> WebSocketConnectionID {
        WebSocketConnectionID(rawValue: nextID.add(1, ordering: .relaxed).oldValue)
    }

    /// Hands `command` to the service thread; callable from any thread. Ignored once the loop stopped.
    func submit(_ command: ServiceCommand) {
        switch command {
        case .send: outboundBacklog.add(1, ordering: .relaxed)
        case .sendMany(let messages, let ids): outboundBacklog.add(ids.count * messages.count, ordering: .relaxed)
        default: break
        }
        inbox.withLock { inbox in
            guard inbox.open else {
                if case .reloadCertificates(_, let done) = command { done() }
                return
            }
            inbox.commands.append(command)
            if inbox.commands.count == 1 { lws_cancel_service(context) }
        }
    }

    /// Stops accepting, closes every connection with `frame` once its queue is flushed, and waits until the
    /// context is destroyed; connections still open after `flushTimeout` are torn down.
    func shutdown(closingWith frame: WebSocketCloseFrame, flushTimeout: Duration) async {
        submit(.drain(frame))
        // The deadline is a child task: it ends, cancelled, before shutdown returns.
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                if (try? await Task.sleep(for: flushTimeout)) != nil { self.submit(.stop) }
            }
            await waitUntilStopped()
            group.cancelAll()
        }
    }

    func waitUntilStopped() async {
        await withCheckedContinuation { continuation in
            let done = termination.withLock { state in
                if !state.done { state.waiters.append(continuation) }
                return state.done
            }
            if done { continuation.resume() }
        }
    }

    private func run() {
        let ticker = CLibWebSockets_startTicker(eventLoop, context, 0.1)
        let beforeWait = CLibWebSockets_startBeforeWait(
            eventLoop,
            { context in
                guard let context else { return }
                Unmanaged<ServiceLoop>.fromOpaque(context).takeUnretainedValue().closeRequested()
            }, Unmanaged.passUnretained(self).toOpaque())
        // Returns once `.stop` breaks the loop.
        CLibWebSockets_runLoop(eventLoop)
        if let beforeWait { CLibWebSockets_stopBeforeWait(eventLoop, beforeWait) }
        if let ticker { CLibWebSockets_stopTicker(eventLoop, ticker) }
        // Commands that arrive from now on, or were not processed yet, are dropped: nothing may start while the
        // context is being destroyed.
        let dropped = inbox.withLock { inbox in
            inbox.open = false
            defer { inbox.commands = [] }
            return inbox.commands
        }
        for case .reloadCertificates(_, let done) in dropped { done() }
        // Destroying the context closes what is left; their CLOSED callbacks report them as usual.
        lws_context_destroy(context)
        CLibWebSockets_destroyLoop(eventLoop)
        let waiters = termination.withLock { state in
            state.done = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Service thread: commands

    func processInbox() {
        let commands = inbox.withLock { inbox in
            defer { inbox.commands = [] }
            return inbox.commands
        }
        for command in commands {
            switch command {
            case .send(let message, let id):
                outboundBacklog.subtract(1, ordering: .relaxed)
                if let connection = connections[id] {
                    connection.enqueue(message)
                } else if let exchange = exchanges[id] {
                    deliver(message, to: exchange)
                }
            case .sendMany(let messages, let ids):
                outboundBacklog.subtract(ids.count * messages.count, ordering: .relaxed)
                for id in ids {
                    if let connection = connections[id] {
                        for message in messages { connection.enqueue(message) }
                    } else if !exchanges.isEmpty, let exchange = exchanges[id] {
                        for message in messages { deliver(message, to: exchange) }
                    }
                }
            case .broadcast(let message):
                for connection in connections.values { connection.enqueue(message) }
            case .close(let id, let frame):
                if let connection = connections[id] {
                    connection.closeAfterFlush(frame)
                } else if let exchange = exchanges[id] {
                    end(exchange, frame)
                }
            case .abort(let id):
                abort(id)
            case .respond(let id, let reply):
                respond(id, reply)
            case .stream(let id, let stream):
                startStream(id, stream)
            case .resumeReceiving(let id):
                connections[id]?.resumeReceiving()
            case .connect(let id, let request):
                connect(id, request)
            case .drain(let frame):
                drain(closingWith: frame)
            case .reloadCertificates(let tls, let done):
                // Existing connections keep the certificate their handshake used; new handshakes get the new one.
                _ = lws_tls_cert_updated(context, tls.certificatePath, tls.privateKeyPath, nil, 0, nil, 0)
                done()
            case .stop:
                stopLoop()
            }
        }
        // After every command, so that a connection's write carries all they queued for it.
        if !unflushed.isEmpty {
            let connections = unflushed
            unflushed = []
            for connection in connections { connection.flush() }
        }
    }

    /// Counts a message of `size` bytes about to be delivered on `id`, in its backlog and in the budget's inbound
    /// account; true when the connection has reached a bound of inbound flow control, or the account its share,
    /// and must stop being read.
    func delivering(on id: WebSocketConnectionID, size: Int) -> Bool {
        guard limits.hasInboundFlowControl else { return false }
        let account = budget[.inbound]
        account.charge(size)
        let overBudget = account.isOver
        let pauses = backlogs.withLock { backlogs in
            backlogs[
                id,
                default: InboundBacklog(maxMessages: limits.maxUnconsumedMessages, maxBytes: limits.maxUnconsumedBytes)
            ]
            .deliver(size: size, overBudget: overBudget)
        }
        if overBudget { account.degraded() }
        return pauses
    }

    /// The application consumed the oldest delivered message of `id`: at half the bounds (once its backlog is
    /// empty, when the budget paused it) a paused connection is read again.
    func consumed(_ id: WebSocketConnectionID) {
        guard limits.hasInboundFlowControl, let consumed = backlogs.withLock({ $0[id]?.consume() }) else { return }
        budget[.inbound].release(consumed.size)
        if consumed.resumes { submit(.resumeReceiving(id)) }
    }

    /// Ends `run`'s loop once the current iteration is done (service thread only, as every callback is).
    private func stopLoop() {
        CLibWebSockets_breakLoop(eventLoop)
    }

    private func drain(closingWith frame: WebSocketCloseFrame) {
        draining = true
        for exchange in exchanges.values { end(exchange, frame) }
        if connections.isEmpty && exchanges.isEmpty {
            stopLoop()
            return
        }
        for connection in connections.values {
            if connection.isOpen {
                connection.closeAfterFlush(frame)
            } else if connection.wsi != nil {
                closeSoon(connection)
            }
        }
    }

    var isDraining: Bool { draining }

    /// Closes `wsi` on the service thread's next turn: lws' asynchronous kill, as a connection may not be closed
    /// inside its own callback. lws 4.1 arms its libev timer only when it services an event, so the kill also wakes
    /// the loop; without that it waited for the next tick, up to 0.1 s. For an API exchange: a WebSocket connection
    /// closes through ``closeSoon(_:)``.
    func killSoon(_ wsi: OpaquePointer, _ reason: pending_timeout) {
        lws_set_timeout(wsi, reason, LWS_TO_KILL_ASYNC)
        lws_cancel_service(context)
    }

    /// Closes `connection`'s socket before the loop next waits, from outside every lws callback (see
    /// ``closeRequested()``), without a close frame: lws shuts our side down and closes it.
    ///
    /// Not lws' asynchronous kill: that is a timeout due now, inserted in lws' sorted list behind every other kill
    /// not yet serviced, and lws services them after the loop's iteration. A thousand peers whose close frames
    /// arrived together cost half a million steps, and a client closing 10,000 connections spent a sixth of its
    /// time there.
    func closeSoon(_ connection: Connection) {
        closing.append(connection.id)
    }

    /// The loop is about to wait: closes the connections ``closeSoon(_:)`` was asked to (their CLOSED callbacks
    /// report them at once), those that closed meanwhile aside.
    func closeRequested() {
        while !closing.isEmpty {
            let ids = closing
            closing = []
            for id in ids {
                if let wsi = connections[id]?.wsi { lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, LWS_TO_KILL_SYNC) }
            }
        }
    }

    /// At each wake-up (the ticker's come every 0.1 s), against one reading of the clock: the idle sweep when it is
    /// due, and the lingering, heartbeats and API answers whose time came.
    func runDueTimers() {
        let now = DispatchTime.now().uptimeNanoseconds
        sweepIdleConnections(at: now)
        endExpiredLingers(at: now)
        cutOffSlowCloses(at: now)
        writeDueHeartbeats(at: now)
        answerOverdueExchanges(at: now)
    }

    /// Once a second, at the first wake-up after it is due: every open connection's peer is judged by
    /// ``Connection/sweepIdle(_:)`` (counting sweeps, not reading a clock per connection: a service thread held up
    /// for a while pings and hangs up later, never sooner), and keep-alive HTTP connections that waited too long for
    /// their next request are closed.
    private func sweepIdleConnections(at now: UInt64) {
        guard now >= nextIdleSweep else { return }
        nextIdleSweep = now + 1_000_000_000
        for connection in connections.values { connection.sweepIdle(idlePolicy) }
        closeIdleKeepAlives(at: now)
    }

    /// Has `connection`'s lingering end after `Connection.lingerSeconds` (at the first wake-up after, within 0.1 s).
    /// Not an lws timeout: lws would insert it in its sorted list behind every other lingering connection's, and a
    /// drain of thousands of connections would walk that list thousands of times (see `Liveness`).
    func endLinger(of connection: Connection) {
        lingerEnds.add(connection.id, at: DispatchTime.now().uptimeNanoseconds)
    }

    /// Ends the lingering of the connections whose time is over (those that closed meanwhile are gone).
    private func endExpiredLingers(at now: UInt64) {
        while let id = lingerEnds.popDue(at: now) { connections[id]?.lingerExpired() }
    }

    /// Has `connection`, a slow reader being closed with 4000, cut off after `slowConsumerCloseSeconds` if it is
    /// still open then (its close frame never went out, or it lingers still). Not an lws timeout set now, for the
    /// reason lingering is not: when a broadcast leaves thousands of readers behind, each would be inserted behind
    /// all the others.
    func cutOffAfterSlowClose(of connection: Connection) {
        slowCloseEnds.add(connection.id, at: DispatchTime.now().uptimeNanoseconds)
    }

    /// Cuts off the slow readers whose time to take their close frame is over (those that closed meanwhile are
    /// gone): through lws' timeout, due now, whose close does not first wait up to 5 s more for what lws buffered of
    /// the frame being written, as any other close would. It is inserted behind only the kills of this wake-up.
    private func cutOffSlowCloses(at now: UInt64) {
        while let id = slowCloseEnds.popDue(at: now) {
            guard let connection = connections[id], let wsi = connection.wsi else { continue }
            connection.stopReading()
            killSoon(wsi, PENDING_TIMEOUT_LAGGING)
        }
    }

    // MARK: Service thread: connection lifecycle

    func register(_ connection: Connection, wsi: OpaquePointer?) {
        connections[connection.id] = connection
        connectionCount.store(connections.count, ordering: .relaxed)
        if let wsi { lws_set_opaque_user_data(wsi, Unmanaged.passUnretained(connection).toOpaque()) }
    }

    func connection(for wsi: OpaquePointer) -> Connection? {
        guard let pointer = lws_get_opaque_user_data(wsi) else { return nil }
        return Unmanaged<Connection>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// A connection's lws handle as a key, for what is kept of connections that have no `Connection` (handshakes,
    /// plain HTTP): its address, which lws reuses once the connection is gone.
    static func key(_ wsi: OpaquePointer) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(wsi)))
    }

    /// Reports the close, forgets the connection, and stops the loop when a drain has closed the last one.
    func finish(_ connection: Connection, detail: String = "") {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        connectionCount.store(connections.count, ordering: .relaxed)
        connection.dropQueue()
        connection.dropAssembling()
        if limits.hasInboundFlowControl, let backlog = backlogs.withLock({ $0.removeValue(forKey: connection.id) }) {
            budget[.inbound].release(backlog.bytes)
        }
        connection.stopReading()
        if let wsi = connection.wsi { lws_set_opaque_user_data(wsi, nil) }
        connection.wsi = nil
        let wasOpen = connection.isOpen
        connection.isOpen = false
        let frame = connection.closeFrame ?? WebSocketCloseFrame(code: .abnormalClosure, reason: detail)
        if let metrics, wasOpen {
            metrics.connectionsOpen.record(Int64(connections.count))
            metrics.recordClose(frame.code)
        }
        handler(.closed(connection.id, frame))
        stopIfDrained()
    }

    /// Ends `run`'s loop once a drain has closed every connection and ended every API exchange.
    func stopIfDrained() {
        if draining, connections.isEmpty, exchanges.isEmpty { stopLoop() }
    }

    /// Writes one message from within a WRITEABLE callback.
    func write(_ message: WebSocketMessage, to wsi: OpaquePointer) -> Int32 {
        let type = message.kind == .text ? LWS_WRITE_TEXT : LWS_WRITE_BINARY
        if case .server = role, message.isContiguous {
            return lws_write(wsi, message.payload.assumingMemoryBound(to: UInt8.self), message.count, type)
        }
        let headroom = WebSocketMessage.headroom
        let buffer = scratchBuffer(headroom + message.count) + headroom
        message.copyPayload(from: 0, count: message.count, to: buffer)
        return lws_write(wsi, buffer.assumingMemoryBound(to: UInt8.self), message.count, type)
    }

    /// How many of the first messages of `queue` fit, framed (with a masking key when `masked`), in `budget` bytes.
    static func framesFitting(_ queue: Deque<WebSocketMessage>, budget: Int, masked: Bool) -> Int {
        var count = 0
        var total = 0
        for message in queue {
            total += frameHeaderSize(message.count, masked: masked) + message.count
            if total > budget { break }
            count += 1
        }
        return count
    }

    /// From within a WRITEABLE callback: writes the first `count` messages of `queue` as complete frames in one
    /// send. Returns false on failure.
    ///
    /// A busy connection (a subscriber of a hot table, a writer getting a group's acks, a writer sending the next
    /// intents as acks come) often has several small messages queued, and one send per message was most of the
    /// server's time at fan-out. lws sends `LWS_WRITE_HTTP` data on a WebSocket connection as is (no framing,
    /// partial sends buffered as usual), so the frames are built here: a 2, 4 or 10 byte header and the payload,
    /// and for a client a masking key between them and the payload masked with it. Only what fits the write budget
    /// is copied (see ``framesFitting(_:budget:masked:)``); a server's bigger message goes out without a copy.
    func writeFrames(_ queue: Deque<WebSocketMessage>, count: Int, to wsi: OpaquePointer) -> Bool {
        let masked = !isServer
        let total = queue.prefix(count).reduce(0) { $0 + Self.frameHeaderSize($1.count, masked: masked) + $1.count }
        let headroom = WebSocketMessage.headroom
        var cursor = scratchBuffer(headroom + total) + headroom
        let start = cursor
        for message in queue.prefix(count) {
            cursor = writeFrame(message.kind == .text ? 0x81 : 0x82, length: message.count, at: cursor) {
                message.copyPayload(from: 0, count: message.count, to: $0)
            }
        }
        return lws_write(wsi, start.assumingMemoryBound(to: UInt8.self), total, LWS_WRITE_HTTP) >= 0
    }

    /// From within a WRITEABLE callback: writes a control frame (a ping, a pong, a close) as is, the way
    /// ``writeFrames(_:count:to:)`` does; a client's is masked (RFC 6455 §5.3) with a fresh random key. Returns false
    /// on failure.
    func writeControlFrame(_ opcode: ControlOpcode, payload: [UInt8], to wsi: OpaquePointer) -> Bool {
        let total = Self.frameHeaderSize(payload.count, masked: !isServer) + payload.count
        let headroom = WebSocketMessage.headroom
        let buffer = scratchBuffer(headroom + total) + headroom
        _ = writeFrame(0x80 | opcode.rawValue, length: payload.count, at: buffer) { body in
            payload.withUnsafeBytes { body.copyMemory(from: $0.baseAddress!, byteCount: payload.count) }
        }
        return lws_write(wsi, buffer.assumingMemoryBound(to: UInt8.self), total, LWS_WRITE_HTTP) >= 0
    }

    /// Builds one whole frame at `cursor`: its header, then for a client a fresh masking key, then the `length`
    /// payload bytes `copy` puts at the address it is given (masked in place for a client). Returns the address
    /// after the frame.
    @inline(__always)
    private func writeFrame(
        _ first: UInt8, length: Int, at cursor: UnsafeMutableRawPointer, payload copy: (UnsafeMutableRawPointer) -> Void
    ) -> UnsafeMutableRawPointer {
        let masked = !isServer
        Self.writeFrameHeader(first, length: length, masked: masked, at: cursor)
        let body = cursor + Self.frameHeaderSize(length, masked: masked)
        copy(body)
        if masked {
            let key = maskingKeys.take()
            (body - 4).storeBytes(of: key, as: UInt32.self)
            MaskingKeys.mask(body, count: length, with: key)
        }
        return body + length
    }

    /// The control frames a connection writes itself.
    enum ControlOpcode: UInt8 {
        case close = 0x8
        case ping = 0x9
        case pong = 0xA
    }

    /// Server role, from within a WRITEABLE callback: writes `count` bytes of `message` from `offset` as one frame
    /// of a fragmented message (the first with the message's opcode, the others continuations, the last with FIN),
    /// copied to the loop's scratch buffer so that the shared payload is never written to. Returns false on failure.
    func writeFragment(of message: WebSocketMessage, offset: Int, count: Int, to wsi: OpaquePointer) -> Bool {
        let headroom = WebSocketMessage.headroom
        let start = scratchBuffer(headroom + Self.frameHeaderSize(count) + count) + headroom
        let opcode: UInt8 = offset > 0 ? 0x00 : message.kind == .text ? 0x01 : 0x02
        let fin: UInt8 = offset + count == message.count ? 0x80 : 0
        Self.writeFrameHeader(fin | opcode, length: count, at: start)
        message.copyPayload(from: offset, count: count, to: start + Self.frameHeaderSize(count))
        let total = Self.frameHeaderSize(count) + count
        return lws_write(wsi, start.assumingMemoryBound(to: UInt8.self), total, LWS_WRITE_HTTP) >= 0
    }

    /// Writes a frame header: `first` (FIN and opcode), then the payload length, with the mask bit when `masked`
    /// (the masking key, which comes next, is the caller's to write).
    static func writeFrameHeader(_ first: UInt8, length: Int, masked: Bool = false, at cursor: UnsafeMutableRawPointer)
    {
        cursor.storeBytes(of: first, as: UInt8.self)
        let maskBit: UInt8 = masked ? 0x80 : 0
        if length < 126 {
            cursor.storeBytes(of: maskBit | UInt8(length), toByteOffset: 1, as: UInt8.self)
        } else if length < 65_536 {
            cursor.storeBytes(of: maskBit | 126, toByteOffset: 1, as: UInt8.self)
            cursor.storeBytes(of: UInt16(length).bigEndian, toByteOffset: 2, as: UInt16.self)
        } else {
            cursor.storeBytes(of: maskBit | 127, toByteOffset: 1, as: UInt8.self)
            cursor.storeBytes(of: UInt64(length).bigEndian, toByteOffset: 2, as: UInt64.self)
        }
    }

    /// The size of a frame's header, with its masking key when `masked`.
    static func frameHeaderSize(_ length: Int, masked: Bool = false) -> Int {
        (length < 126 ? 2 : length < 65_536 ? 4 : 10) + (masked ? 4 : 0)
    }

    private func scratchBuffer(_ capacity: Int) -> UnsafeMutableRawPointer {
        if capacity > scratchCapacity {
            scratch.deallocate()
            scratchCapacity = capacity
            scratch = .allocate(byteCount: capacity, alignment: 16)
        }
        return scratch
    }

    var isServer: Bool {
        if case .server = role { return true }
        return false
    }
}
