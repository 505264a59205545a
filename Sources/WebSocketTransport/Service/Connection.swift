import CLibWebSockets
import DequeModule
import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// One WebSocket connection's state. Touched only on the service thread.
final class Connection {
    let id: WebSocketConnectionID
    /// The loop that owns it. `unowned(unsafe)`: the loop holds its connections and only its service thread touches
    /// them, so it outlives every use; a checked `unowned` cost an atomic retain and release at each of the many
    /// reads of the loop per message written (3 % of the fan-out's cycles in `perf`).
    unowned(unsafe) let loop: ServiceLoop
    /// The lws connection; `nil` for a client connection before lws created it and after it closed.
    var wsi: OpaquePointer?
    var isOpen = false

    /// Messages waiting to be written. Non-empty implies a flush (see ``flush()``) or a writable callback is due.
    private var queue = Deque<WebSocketMessage>()
    /// Bytes of the queued messages that count against `maxQueuedBytes`: all but the oversized ones.
    private var queuedBytes = 0
    /// Queued messages larger than `maxQueuedBytes` on their own (a big table's snapshot or batch update).
    private var oversizedQueued = 0
    /// Oversized messages a connection may have queued at once. They do not count against `maxQueuedBytes`, or a
    /// reader could never be sent one, and fanned-out ones share one buffer; but a reader that lets them pile
    /// up is as slow as any other.
    static let maxOversizedQueued = 4
    /// At most this many of a connection's queued messages count in the loop's `outboundBacklog`.
    static let backlogWeightCap = 64
    /// Bytes of the queue counted in the budget's outbound account: each entry's overhead, and the payload of the
    /// messages not charged to another account.
    private(set) var budgetedBytes = 0
    /// What a queue entry costs beside its payload (the entry, the message object's share), as the budget counts it.
    static let queueEntryOverhead = 64
    /// Bytes read and not delivered yet (the parser's buffer and the message being assembled), as counted in the
    /// budget's inbound account.
    var assemblingCounted = 0
    /// Server role: bytes of the first queued message already written as fragments (see ``writeable(_:)``).
    var headWritten = 0
    /// Set when the connection should close once `queue` is written (empty after an overflow).
    var pendingClose: WebSocketCloseFrame?
    /// What the `closed` event reports: the frame we sent, or the peer's.
    var closeFrame: WebSocketCloseFrame?

    /// Reading is paused: the application has a bound's worth of this connection's messages in hand.
    var receivingPaused = false
    /// What the peer sends is dropped unread: it broke a rule that leaves its stream unreadable (a bad frame header),
    /// or its close frame was read.
    var droppingInbound = false
    var inbound: [UInt8] = []
    var inboundKind = WebSocketMessageKind.text
    var assembling = false

    /// The libev watcher that reads the socket once the connection is open, and the frames read (see
    /// `startReading`).
    var reader: UnsafeMutableRawPointer?
    var parser: FrameParser
    /// A ping's payload, to be answered with a pong from the next WRITEABLE callback.
    var pendingPong: [UInt8]?
    /// The answer to the peer's close frame; the connection closes once it is written.
    var closeReply: WebSocketCloseFrame?
    var closeReplyWritten = false
    /// The close frame of a close we started was handed to lws (it may still be buffering part of it).
    var closeWritten = false
    /// That close frame is out, and the connection lingers (see ``linger(_:)``).
    var lingering = false
    /// Bytes read while lingering.
    var lingeredBytes = 0
    /// The peer sent its close frame or ended its stream after we started closing.
    var peerDone = false
    /// lws may hold bytes the peer sent right behind the handshake (see `takeEarlyInput`).
    var mayHaveEarlyInput = false
    /// Whether the peer was heard from lately (see ``sweepIdle(_:)``).
    var liveness = Liveness()
    /// The idle sweep found the peer silent long enough: a PING goes out from the next WRITEABLE callback.
    var pingDue = false
    /// Client role: why the server's certificate did not verify, when it did not.
    var certificateError: String?

    /// Client role: the request's C strings, which lws reads until the connection ends.
    var clientRequest: ClientRequestStrings?

    init(id: WebSocketConnectionID, loop: ServiceLoop) {
        self.id = id
        self.loop = loop
        parser = FrameParser(readsMaskedFrames: loop.isServer)
    }

    // MARK: Outbound

    func enqueue(_ message: WebSocketMessage) {
        guard pendingClose == nil else { return }
        let limits = loop.limits
        let oversized = message.count > limits.maxQueuedBytes
        guard queue.count < limits.maxQueuedMessages,
            oversized ? oversizedQueued < Self.maxOversizedQueued : queuedBytes + message.count <= limits.maxQueuedBytes
        else {
            overflow()
            return
        }
        queue.append(message)
        if queue.count <= Self.backlogWeightCap { loop.outboundBacklog.add(1, ordering: .relaxed) }
        if oversized { oversizedQueued += 1 } else { queuedBytes += message.count }
        let cost = Self.budgetCost(of: message)
        budgetedBytes += cost
        loop.budget[.outbound].charge(cost)
        if queue.count == 1, isOpen, wsi != nil { loop.unflushed.append(self) }
        if loop.budget[.outbound].isOver { loop.shedOutbound() }
    }

    /// Writes what the loop's commands queued right away, as the WRITEABLE callback would (see ``writeable(_:)``),
    /// instead of asking lws for that callback. A socket with nothing buffered takes a write; when it takes only
    /// part (or none), lws buffers the rest and asks for POLLOUT itself, and the callback goes on from there. Asking
    /// first cost two `epoll_ctl` calls (POLLOUT on, then off) and an event per write: 9 % of the server's cycles
    /// in a fan-out.
    func flush() {
        guard isOpen, let wsi, !queue.isEmpty, lws_partial_buffered(wsi) == 0 else { return }
        if writeable(wsi) < 0 {
            // A failed write outside a callback: lws closes the socket when told, as it would on the callback's -1.
            stopReading()
            loop.closeSoon(self)
        }
    }

    private static func budgetCost(of message: WebSocketMessage) -> Int {
        queueEntryOverhead + (message.isCharged ? 0 : message.count)
    }

    /// The peer fell behind: drop its queue and close it with 4000 once the frame being written is. A reader that
    /// stopped reading gets `slowConsumerCloseSeconds` to take that and the close frame: a bare TCP close would
    /// cut it off mid-frame, and all it holds meanwhile is what lws buffered of one write. Either way the `closed`
    /// event reports `slowConsumer`.
    private func overflow() {
        loop.metrics?.queueOverflows.increment()
        closeSlow(reason: "outbound queue overflow")
    }

    /// The memory budget's outbound account is over and this queue counts among the most in it: closed as a slow
    /// reader is (see `ServiceLoop.shedOutbound`).
    func shed() {
        closeSlow(reason: "server memory for outbound queues exhausted")
    }

    private func closeSlow(reason: String) {
        dropQueue()
        let frame = WebSocketCloseFrame(code: .slowConsumer, reason: reason)
        pendingClose = frame
        closeFrame = frame
        if isOpen, let wsi {
            beginClosing()
            lws_callback_on_writable(wsi)
            loop.cutOffAfterSlowClose(of: self)
        }
    }

    /// Takes the first queued message off the queue and its accounting.
    @discardableResult
    private func dequeue() -> WebSocketMessage {
        let message = queue.removeFirst()
        if queue.count < Self.backlogWeightCap { loop.outboundBacklog.subtract(1, ordering: .relaxed) }
        if message.count > loop.limits.maxQueuedBytes { oversizedQueued -= 1 } else { queuedBytes -= message.count }
        let cost = Self.budgetCost(of: message)
        budgetedBytes -= cost
        loop.releaseOutbound(cost)
        return message
    }

    /// Drops every queued message (overflow, the peer's close, the connection's end).
    func dropQueue() {
        loop.outboundBacklog.subtract(min(queue.count, Self.backlogWeightCap), ordering: .relaxed)
        queue.removeAll()
        headWritten = 0
        queuedBytes = 0
        oversizedQueued = 0
        if budgetedBytes > 0 {
            loop.releaseOutbound(budgetedBytes)
            budgetedBytes = 0
        }
    }

    /// Counts in the budget's inbound account what was read and not delivered yet, as it is now.
    func countAssembling() {
        let held = parser.bufferedBytes + inbound.count
        guard held != assemblingCounted else { return }
        let account = loop.budget[.inbound]
        if held > assemblingCounted {
            account.charge(held - assemblingCounted)
        } else {
            account.release(assemblingCounted - held)
        }
        assemblingCounted = held
    }

    /// The connection ended: what it was assembling is given back to the budget.
    func dropAssembling() {
        inbound = []
        loop.budget[.inbound].release(assemblingCounted)
        assemblingCounted = 0
    }

    /// Closes with `frame` after the messages already queued are written.
    func closeAfterFlush(_ frame: WebSocketCloseFrame) {
        guard pendingClose == nil else { return }
        pendingClose = frame
        if isOpen, let wsi {
            beginClosing()
            lws_callback_on_writable(wsi)
        }
    }

    /// Called once the connection opened, so that anything queued before (client role) gets written.
    func didOpen(_ wsi: OpaquePointer) {
        self.wsi = wsi
        isOpen = true
        if !queue.isEmpty || pendingClose != nil { lws_callback_on_writable(wsi) }
    }

    /// The WRITEABLE callback: writes queued messages until lws had to buffer part of one (the socket is full)
    /// or `writeBudget` bytes went out, then asks for another callback if messages remain. When several small ones
    /// are queued they go out as one send (see ``ServiceLoop/writeFrames(_:count:to:)``; a client's every message
    /// that fits goes that way, masked with keys drawn in bulk, where lws draws one per frame). On the server a
    /// message bigger than the budget goes out as fragments of at most the budget, one per callback: lws copies
    /// what the socket does not take of a write, so a whole big message (a snapshot shared by a thousand
    /// subscribers) would otherwise be copied once per connection.
    ///
    /// `lws_partial_buffered` is a flag check, where `lws_send_pipe_choked` costs a `poll` syscall per message;
    /// the budget keeps one fast reader from holding the service thread.
    func writeable(_ wsi: OpaquePointer) -> Int32 {
        if closeWritten {
            // Linger once lws has sent all of our close frame.
            guard lws_partial_buffered(wsi) == 0 else {
                lws_callback_on_writable(wsi)
                return 0
            }
            linger(wsi)
            return 0
        }
        if let reply = closeReply {
            if !closeReplyWritten {
                closeReplyWritten = true
                guard loop.writeControlFrame(.close, payload: reply.payload, to: wsi) else { return -1 }
            }
            // Closing without a reason of ours for lws: it sends nothing more and closes the socket.
            guard lws_partial_buffered(wsi) == 0 else {
                lws_callback_on_writable(wsi)
                return 0
            }
            return -1
        }
        if let pong = pendingPong {
            pendingPong = nil
            guard loop.writeControlFrame(.pong, payload: pong, to: wsi) else { return -1 }
        }
        if pingDue {
            pingDue = false
            if pendingClose == nil, !loop.writeControlFrame(.ping, payload: [], to: wsi) { return -1 }
        }
        var messages = 0
        var bytes = 0
        var writes = 0
        defer {
            if writes > 0, let metrics = loop.metrics {
                metrics.messagesSent.increment(by: Int64(messages))
                metrics.bytesSent.increment(by: Int64(bytes))
                metrics.writes.increment(by: Int64(writes))
            }
        }
        while let message = queue.first {
            let fitting = ServiceLoop.framesFitting(queue, budget: Self.writeBudget - bytes, masked: !loop.isServer)
            if loop.isServer, message.count > Self.writeBudget {
                let count = min(Self.writeBudget, message.count - headWritten)
                guard loop.writeFragment(of: message, offset: headWritten, count: count, to: wsi) else { return -1 }
                headWritten += count
                bytes += count
                if headWritten == message.count {
                    dequeue()
                    headWritten = 0
                    messages += 1
                }
            } else if fitting > 1 || (fitting == 1 && !loop.isServer) {
                guard loop.writeFrames(queue, count: fitting, to: wsi) else { return -1 }
                for _ in 0..<fitting {
                    bytes += dequeue().count
                }
                messages += fitting
            } else {
                if loop.write(message, to: wsi) < 0 { return -1 }
                dequeue()
                messages += 1
                bytes += message.count
            }
            writes += 1
            if lws_partial_buffered(wsi) != 0 || bytes >= Self.writeBudget { break }
        }
        // Close only once lws has sent what it buffered of a partial write, or the close would cut it off.
        if !queue.isEmpty || (pendingClose != nil && lws_partial_buffered(wsi) != 0) {
            lws_callback_on_writable(wsi)
            return 0
        }
        if let frame = pendingClose { return close(wsi, with: frame) }
        return 0
    }

    /// The loop's once-a-second sweep: pings a peer silent for the policy's first span and hangs up on one silent
    /// for its second, without a close frame (the peer is not answering), reported as 1006. A closing connection is
    /// bounded by its own timeouts instead, and one whose reading is paused counts as heard: what it sent waits
    /// unread.
    func sweepIdle(_ policy: Liveness.Policy) {
        guard isOpen, let wsi, reader != nil, pendingClose == nil, closeReply == nil else { return }
        if receivingPaused { liveness.heardFromPeer() }
        switch liveness.sweep(policy) {
        case .none:
            break
        case .ping:
            pingDue = true
            lws_callback_on_writable(wsi)
        case .hangUp:
            closeFrame = WebSocketCloseFrame(
                code: .abnormalClosure, reason: "peer silent for \(policy.hangUpAfterSeconds) s, PING unanswered")
            stopReading()
            loop.closeSoon(self)
        }
    }

    /// Records `frame`, writes it and then lingers (see ``linger(_:)``).
    func close(_ wsi: OpaquePointer, with frame: WebSocketCloseFrame) -> Int32 {
        if closeFrame == nil { closeFrame = frame }
        closeWritten = true
        guard loop.writeControlFrame(.close, payload: frame.payload, to: wsi) else { return -1 }
        if lws_partial_buffered(wsi) != 0 {
            lws_callback_on_writable(wsi)
        } else {
            linger(wsi)
        }
        return 0
    }

}
