import CLibWebSockets
import Dispatch
import DequeModule
#if canImport(Glibc)
import Glibc
#endif

/// One WebSocket connection's state. Touched only on the service thread.
final class Connection {
    let id: WebSocketConnectionID
    unowned let loop: ServiceLoop
    /// The lws connection; `nil` for a client connection before lws created it and after it closed.
    var wsi: OpaquePointer?
    var isOpen = false

    /// Messages waiting for a writable callback. Non-empty implies a writable callback is requested.
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
    private var assemblingCounted = 0
    /// Server role: bytes of the first queued message already written as fragments (see ``writeable(_:)``).
    private var headWritten = 0
    /// Set when the connection should close once `queue` is written (empty after an overflow).
    private(set) var pendingClose: WebSocketCloseFrame?
    /// What the `closed` event reports: the frame we sent, or the peer's.
    var closeFrame: WebSocketCloseFrame?

    /// Reading is paused: the application has a bound's worth of this connection's messages in hand.
    private var receivingPaused = false
    /// What the peer sends is dropped unread: it broke a rule that leaves its stream unreadable (a bad frame header;
    /// client role: any rule), or its close frame was read.
    private var droppingInbound = false
    private var inbound: [UInt8] = []
    private var inboundKind = WebSocketMessageKind.text
    private var assembling = false

    /// Server role: the libev watcher that reads the socket, and the frames read (see `startReading`).
    private var reader: UnsafeMutableRawPointer?
    private var parser = FrameParser()
    /// Server role: a ping's payload, to be answered with a pong from the next WRITEABLE callback.
    private var pendingPong: [UInt8]?
    /// Server role: the answer to the peer's close frame; the connection closes once it is written.
    private var closeReply: WebSocketCloseFrame?
    private var closeReplyWritten = false
    /// Server role: the close frame of a close we started was handed to lws (it may still be buffering part of it).
    private var closeWritten = false
    /// Server role: that close frame is out, and the connection lingers (see ``linger(_:)``).
    private var lingering = false
    /// Bytes read while lingering.
    private var lingeredBytes = 0
    /// Server role: the peer sent its close frame or ended its stream after we started closing.
    private var peerDone = false
    /// Server role: lws may hold bytes the peer sent with its upgrade request (see `takeEarlyInput`).
    private var mayHaveEarlyInput = false
    /// Client role: why the server's certificate did not verify, when it did not.
    var certificateError: String?

    /// Client role: the request's C strings, which lws reads until the connection ends.
    var clientRequest: ClientRequestStrings?

    init(id: WebSocketConnectionID, loop: ServiceLoop) {
        self.id = id
        self.loop = loop
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
        if queue.count == 1, isOpen, let wsi { lws_callback_on_writable(wsi) }
        if loop.budget[.outbound].isOver { loop.shedOutbound() }
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
            lws_set_timeout(wsi, PENDING_TIMEOUT_LAGGING, Int32(loop.limits.slowConsumerCloseSeconds))
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
    private func countAssembling() {
        let held = parser.bufferedBytes + inbound.count
        guard held != assemblingCounted else { return }
        let account = loop.budget[.inbound]
        if held > assemblingCounted { account.charge(held - assemblingCounted) } else { account.release(assemblingCounted - held) }
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
    /// or `writeBudget` bytes went out, then asks for another callback if messages remain. On the server, when
    /// several small ones are queued they go out as one send (see ``ServiceLoop/writeFrames(_:count:to:)``), and a
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
                guard loop.writeControlFrame(opcode: 0x8, payload: reply.payload, to: wsi) else { return -1 }
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
            guard loop.writeControlFrame(opcode: 0xA, payload: pong, to: wsi) else { return -1 }
        }
        var messages = 0
        var bytes = 0
        defer {
            if bytes > 0, let metrics = loop.metrics {
                metrics.messagesSent.increment(by: Int64(messages))
                metrics.bytesSent.increment(by: Int64(bytes))
            }
        }
        while let message = queue.first {
            let fitting = loop.isServer ? ServiceLoop.framesFitting(queue, budget: Self.writeBudget - bytes) : 0
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
            } else if fitting > 1 {
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

    /// Records `frame` and sends it. The client role hands it to lws and returns -1: lws sends it and closes. The
    /// server role writes it itself and then lingers (see ``linger(_:)``).
    func close(_ wsi: OpaquePointer, with frame: WebSocketCloseFrame) -> Int32 {
        if closeFrame == nil { closeFrame = frame }
        guard loop.isServer else {
            // A close frame's payload is at most 125 bytes: 2 for the code, the rest for the reason.
            var reason = Array(frame.reason.utf8.prefix(123))
            lws_close_reason(wsi, lws_close_status(rawValue: UInt32(frame.code.rawValue)), &reason, reason.count)
            return -1
        }
        closeWritten = true
        guard loop.writeControlFrame(opcode: 0x8, payload: frame.payload, to: wsi) else { return -1 }
        if lws_partial_buffered(wsi) != 0 {
            lws_callback_on_writable(wsi)
        } else {
            linger(wsi)
        }
        return 0
    }

    // MARK: Closing, server role

    /// The connection will close: what the peer sends from now on is read and dropped, not delivered (a paused
    /// connection is read again), so that a peer still sending is not left blocked with our close frame unread
    /// behind what it sent. Its close frame is still found among what it sends (see `FrameParser.skipsData`).
    private func beginClosing() {
        guard loop.isServer else { return }
        parser.skipsData = true
        inbound = []
        assembling = false
        countAssembling()
        guard receivingPaused, let reader else { return }
        receivingPaused = false
        CLibWebSockets_startReader(loop.eventLoop, reader)
        CLibWebSockets_feedReader(loop.eventLoop, reader)
    }

    /// Our close frame is out. Closing the socket now would make the kernel answer what the peer is still sending
    /// with a reset, which destroys the close frame in the peer's receive buffer before the peer read it. So, as
    /// nginx's lingering close does, the connection keeps reading and dropping what arrives until the peer's close
    /// frame or the end of its stream, for at most `lingerSeconds` and `lingerBytes`, and then closes.
    private func linger(_ wsi: OpaquePointer) {
        guard !lingering else { return }
        lingering = true
        guard !peerDone, reader != nil else { return endLingering(wsi) }
        // No idle ping after a close frame.
        lws_validity_confirmed(wsi)
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, Self.lingerSeconds)
    }

    /// Closes the socket (lws shuts down our side and closes it, sending nothing more: it was given no close reason).
    private func endLingering(_ wsi: OpaquePointer) {
        stopReading()
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, LWS_TO_KILL_ASYNC)
    }

    /// The peer's close frame or end of stream after we started closing: the socket closes once our close frame
    /// is out.
    private func peerFinished(_ wsi: OpaquePointer) {
        peerDone = true
        droppingInbound = true
        if lingering { endLingering(wsi) }
    }

    static let lingerSeconds: Int32 = 2
    static let lingerBytes = 1 << 20

    static let writeBudget = 64 * 1024

    // MARK: Inbound, server role

    /// Takes reading over from lws once the connection is established: lws 4.1 acts on a frame header before any
    /// callback sees it, accepting unmasked frames and non-minimal lengths and dropping the connection without a
    /// close frame for an oversized control frame or a length with its top bit set. A libev watcher on the socket
    /// reads it instead (through OpenSSL on a TLS connection), `FrameParser` applies RFC 6455 §5, and lws keeps the
    /// handshake, the writing, its idle pings and closing the socket.
    func startReading(_ wsi: OpaquePointer) {
        lws_rx_flow_control(wsi, 0)
        reader = CLibWebSockets_newReader(lws_get_socket_fd(wsi), { context in
            guard let context else { return }
            Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue().readable()
        }, Unmanaged.passUnretained(self).toOpaque())
        guard let reader else { return }
        CLibWebSockets_startReader(loop.eventLoop, reader)
        // lws may hold bytes that came with the upgrade request, and OpenSSL decrypted ones: read them at once
        // (from the next loop iteration: lws keeps the bytes once this ESTABLISHED callback has returned).
        mayHaveEarlyInput = true
        CLibWebSockets_feedReader(loop.eventLoop, reader)
    }

    /// Hands the parser what lws read past the upgrade request: frames a client sent without waiting for the 101
    /// (RFC 6455 has it wait, but they must not be lost), and half a frame just as well.
    private func takeEarlyInput(_ wsi: OpaquePointer) {
        mayHaveEarlyInput = false
        guard let offset = loop.inputBuflistOffset(wsi) else { return }
        let buffer = loop.readBuffer
        while case let count = CLibWebSockets_takeBufferedInput(wsi, offset, buffer.baseAddress, buffer.count), count > 0 {
            parser.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// A TLS connection whose OpenSSL object holds decrypted bytes is read on the next loop iteration: the socket
    /// need not become readable again for them.
    private func feedIfTLSPending(_ wsi: OpaquePointer, _ reader: UnsafeMutableRawPointer) {
        if let tls = CLibWebSockets_tlsConnection(wsi), CLibWebSockets_tlsPending(tls) > 0 {
            CLibWebSockets_feedReader(loop.eventLoop, reader)
        }
    }

    /// Stops and frees the watcher; the connection is closing.
    func stopReading() {
        guard let reader else { return }
        CLibWebSockets_freeReader(loop.eventLoop, reader)
        self.reader = nil
    }

    /// The socket is readable: reads up to `readBudget` bytes (so that one fast sender cannot hold the service
    /// thread) and handles the whole frames among them.
    private func readable() {
        guard let wsi, let reader else { return }
        if mayHaveEarlyInput { takeEarlyInput(wsi) }
        // Frames already read: what came with the upgrade request, or what a pause held back before closing.
        if parser.bufferedBytes > 0 {
            handleFrames(wsi)
            guard self.reader != nil else { return }
            if receivingPaused {
                CLibWebSockets_stopReader(loop.eventLoop, reader)
                return
            }
        }
        let fd = lws_get_socket_fd(wsi)
        let tls = CLibWebSockets_tlsConnection(wsi)
        let buffer = loop.readBuffer
        var budget = Self.readBudget
        while budget > 0 {
            let count: Int
            if let tls {
                count = CLibWebSockets_tlsRead(tls, buffer.baseAddress, Int32(buffer.count))
                if count == 0 || count == -2 { return peerGone(wsi) }
                if count < 0 { return }
            } else {
                count = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    return peerGone(wsi)
                }
                if count < 0 {
                    if errno == EINTR { continue }
                    return
                }
            }
            budget -= count
            if lingering {
                lingeredBytes += count
                if lingeredBytes > Self.lingerBytes { return endLingering(wsi) }
            }
            // After a violation or the peer's close, what else it sends is dropped unread.
            guard !droppingInbound, closeReply == nil else { continue }
            parser.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            handleFrames(wsi)
            if self.reader == nil { return }
            if receivingPaused {
                CLibWebSockets_stopReader(loop.eventLoop, reader)
                return
            }
        }
        // Out of budget: a plain socket is still readable, but decrypted bytes need a nudge.
        feedIfTLSPending(wsi, reader)
    }

    static let readBudget = 256 * 1024

    /// The peer closed its side or the socket failed: lws closes the connection (reported as 1006 unless a close
    /// frame was exchanged). A peer that sent its close frame and then shut down its side may still read: the
    /// answer is written first, and the connection closes after it.
    private func peerGone(_ wsi: OpaquePointer) {
        stopReading()
        if closeReply != nil, !closeReplyWritten { return }
        // Our close frame is still being written: the socket closes once it is out.
        if closeWritten, !lingering { return peerFinished(wsi) }
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, LWS_TO_KILL_ASYNC)
    }

    /// When the peer was last reported alive to lws (uptime, ns).
    private var confirmedAliveAt: UInt64 = 0

    /// Any frame proves the peer alive, so lws' idle ping can wait. Reported at most once a second: lws reschedules
    /// the connection's ping timer in a sorted list of every connection's timers, walking past thousands of entries
    /// with thousands connected, which a busy writer paid for each of its frames.
    private func confirmAlive(_ wsi: OpaquePointer) {
        let now = DispatchTime.now().uptimeNanoseconds
        guard now &- confirmedAliveAt >= 1_000_000_000 else { return }
        confirmedAliveAt = now
        lws_validity_confirmed(wsi)
    }

    /// Handles the whole frames parsed so far, until reading pauses or the connection starts closing.
    private func handleFrames(_ wsi: OpaquePointer) {
        while !receivingPaused, !droppingInbound, closeReply == nil,
            let output = parser.next(assembled: inbound.count, limit: loop.limits.maxMessageSize)
        {
            confirmAlive(wsi)
            switch output {
            case .violation(let frame):
                if pendingClose == nil { _ = refuseInbound(wsi, frame) }
                // After a bad header nothing more can be read from the stream, the peer's close frame included; an
                // oversized frame is skipped like any data frame once the connection is closing.
                if frame.code == .protocolError { droppingInbound = true }
            case .frame(let frame):
                switch frame.opcode {
                case .text, .binary:
                    assembling = true
                    inboundKind = frame.opcode == .text ? .text : .binary
                    frame.payload.withUnsafeBytes { _ = take(wsi, $0, final: frame.fin) }
                case .continuation:
                    frame.payload.withUnsafeBytes { _ = take(wsi, $0, final: frame.fin) }
                case .ping where pendingClose == nil:
                    pendingPong = frame.payload
                    lws_callback_on_writable(wsi)
                case .ping:
                    break
                case .pong:
                    break
                case .close:
                    receivedClose(wsi, frame.payload)
                }
            }
        }
        countAssembling()
    }

    /// The peer's close frame. When ours was written, this is its answer and the connection ends once ours is out;
    /// otherwise it is answered (see `Self.answer(toClose:)`) from the next WRITEABLE callback, before anything
    /// queued.
    private func receivedClose(_ wsi: OpaquePointer, _ payload: [UInt8]) {
        if closeWritten { return peerFinished(wsi) }
        let (peer, reply) = payload.withUnsafeBytes { Self.answer(toClose: $0) }
        closeFrame = closeFrame ?? peer ?? reply
        closeReply = reply
        dropQueue()
        lws_callback_on_writable(wsi)
    }

    // MARK: Inbound

    /// A RECEIVE callback (client role): one chunk of a frame. Reassembles fragments, enforces the size limit,
    /// validates text.
    func receive(_ wsi: OpaquePointer, _ data: UnsafeRawPointer?, _ length: Int) -> Int32 {
        if droppingInbound { return 0 }
        if !assembling {
            assembling = true
            inboundKind = lws_frame_is_binary(wsi) != 0 ? .binary : .text
        }
        let maxSize = loop.limits.maxMessageSize
        // What the frame header announced counts at once: a frame claiming more than the limit is refused at its
        // first bytes, not after the limit's worth of them.
        if inbound.count + length + lws_remaining_packet_payload(wsi) > maxSize {
            return refuseInbound(wsi, WebSocketCloseFrame(code: .messageTooBig, reason: "message exceeds \(maxSize) bytes"))
        }
        defer { countAssembling() }
        return take(wsi, UnsafeRawBufferPointer(start: data, count: length), final: lws_is_final_fragment(wsi) != 0)
    }

    /// Adds a chunk of the message being assembled; once `final`, validates and delivers the message.
    private func take(_ wsi: OpaquePointer, _ chunk: UnsafeRawBufferPointer, final: Bool) -> Int32 {
        let bytes: [UInt8]
        if final {
            if inbound.isEmpty {
                bytes = Array(chunk)
            } else {
                inbound.append(contentsOf: chunk)
                bytes = inbound
                inbound = []
            }
            assembling = false
        } else {
            inbound.append(contentsOf: chunk)
            return 0
        }
        if inboundKind == .text, !UTF8Validation.isValid(bytes) {
            return refuseInbound(wsi, WebSocketCloseFrame(code: .invalidPayload, reason: "invalid UTF-8"))
        }
        if let metrics = loop.metrics {
            metrics.messagesReceived.increment()
            metrics.bytesReceived.increment(by: Int64(bytes.count))
        }
        // What was assembled is now delivered: counted as delivered, not twice.
        countAssembling()
        if loop.delivering(on: id, size: bytes.count), !receivingPaused {
            receivingPaused = true
            // The server's reader stops itself once the frames in hand are handled.
            if reader == nil { lws_rx_flow_control(wsi, 0) }
        }
        loop.handler(.message(id, WebSocketInboundMessage(kind: inboundKind, bytes: bytes)))
        return 0
    }

    /// Closes with `frame` because of what the peer sent, from the next WRITEABLE callback rather than from this
    /// RECEIVE one: lws 4.1's client freed its receive buffer twice when a RECEIVE callback closed the connection.
    /// What is still queued for the peer is dropped, and so is what it sends meanwhile.
    private func refuseInbound(_ wsi: OpaquePointer, _ frame: WebSocketCloseFrame) -> Int32 {
        // The client role reads through lws, which cannot look for the peer's close frame among what is dropped.
        if !loop.isServer { droppingInbound = true }
        inbound = []
        assembling = false
        countAssembling()
        dropQueue()
        pendingClose = frame
        closeFrame = frame
        beginClosing()
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Reads the connection again after a pause (see `ServiceLoop.consumed`), starting with the frames already
    /// read.
    func resumeReceiving() {
        guard receivingPaused, let wsi else { return }
        receivingPaused = false
        guard let reader else {
            lws_rx_flow_control(wsi, 1)
            return
        }
        handleFrames(wsi)
        if !receivingPaused {
            CLibWebSockets_startReader(loop.eventLoop, reader)
            feedIfTLSPending(wsi, reader)
        }
    }

    /// The peer's close frame as lws hands it over (client role): lws echoes it; a frame the RFC forbids is
    /// answered instead (see `Self.answer(toClose:)`). lws has already turned most reserved codes into 1002 by
    /// then, but not codes of 5000 and above. Returns -1 so that lws sends our frame rather than the echo.
    func peerClosed(_ wsi: OpaquePointer, _ data: UnsafeRawPointer?, _ length: Int) -> Int32 {
        let (peer, reply) = Self.answer(toClose: UnsafeRawBufferPointer(start: data, count: length))
        guard let peer, reply == peer else {
            closeFrame = closeFrame ?? reply
            return close(wsi, with: reply)
        }
        if closeFrame == nil { closeFrame = peer }
        return 0
    }

    /// The peer's close frame (2 bytes of code in network order, then a UTF-8 reason), when it is valid, and the
    /// frame to answer it with: its echo, or (RFC 6455 §5.5.1, §7.4) 1002 for a code no endpoint may send or a
    /// 1-byte payload, 1007 for a reason that is not UTF-8. An empty payload is valid and reported as 1005.
    static func answer(toClose payload: UnsafeRawBufferPointer) -> (peer: WebSocketCloseFrame?, reply: WebSocketCloseFrame) {
        if payload.isEmpty {
            return (WebSocketCloseFrame(code: .noStatusReceived), WebSocketCloseFrame(code: .noStatusReceived))
        }
        guard payload.count >= 2 else {
            return (nil, WebSocketCloseFrame(code: .protocolError, reason: "a close payload needs a 2-byte code"))
        }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketCloseCode(rawValue: code).maySend else {
            return (nil, WebSocketCloseFrame(code: .protocolError, reason: "close code \(code) is not allowed"))
        }
        let reason = Array(payload.dropFirst(2))
        guard UTF8Validation.isValid(reason) else {
            return (nil, WebSocketCloseFrame(code: .invalidPayload, reason: "the close reason is not UTF-8"))
        }
        let peer = WebSocketCloseFrame(code: WebSocketCloseCode(rawValue: code), reason: String(decoding: reason, as: UTF8.self))
        return (peer, peer)
    }
}
