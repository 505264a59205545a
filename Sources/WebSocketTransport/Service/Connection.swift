import CLibWebSockets
import DequeModule

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
    /// Server role: bytes of the first queued message already written as fragments (see ``writeable(_:)``).
    private var headWritten = 0
    /// Set when the connection should close once `queue` is written (empty after an overflow).
    private(set) var pendingClose: WebSocketCloseFrame?
    /// What the `closed` event reports: the frame we sent, or the peer's.
    var closeFrame: WebSocketCloseFrame?

    /// Reading is paused: the application has a bound's worth of this connection's messages in hand.
    private var receivingPaused = false
    /// The peer broke a rule (too big, bad UTF-8): the connection is closing and what it sends is dropped.
    private var droppingInbound = false
    private var inbound: [UInt8] = []
    private var inboundKind = WebSocketMessageKind.text
    private var assembling = false

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
        if oversized { oversizedQueued += 1 } else { queuedBytes += message.count }
        if queue.count == 1, isOpen, let wsi { lws_callback_on_writable(wsi) }
    }

    /// The peer fell behind: drop its queue and close it. If it never becomes writable again (it stopped
    /// reading), lws kills it after two seconds; either way the `closed` event reports `slowConsumer`.
    private func overflow() {
        dropQueue()
        let frame = WebSocketCloseFrame(code: .slowConsumer, reason: "outbound queue overflow")
        pendingClose = frame
        closeFrame = frame
        loop.metrics?.queueOverflows.increment()
        if isOpen, let wsi {
            lws_callback_on_writable(wsi)
            lws_set_timeout(wsi, PENDING_TIMEOUT_LAGGING, 2)
        }
    }

    /// Takes the first queued message off the queue and its accounting.
    @discardableResult
    private func dequeue() -> WebSocketMessage {
        let message = queue.removeFirst()
        if message.count > loop.limits.maxQueuedBytes { oversizedQueued -= 1 } else { queuedBytes -= message.count }
        return message
    }

    private func dropQueue() {
        queue.removeAll()
        headWritten = 0
        queuedBytes = 0
        oversizedQueued = 0
    }

    /// Closes with `frame` after the messages already queued are written.
    func closeAfterFlush(_ frame: WebSocketCloseFrame) {
        guard pendingClose == nil else { return }
        pendingClose = frame
        if isOpen, let wsi { lws_callback_on_writable(wsi) }
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

    /// Records `frame`, hands it to lws and returns -1 so that lws sends the close frame and closes.
    func close(_ wsi: OpaquePointer, with frame: WebSocketCloseFrame) -> Int32 {
        if closeFrame == nil { closeFrame = frame }
        // A close frame's payload is at most 125 bytes: 2 for the code, the rest for the reason.
        var reason = Array(frame.reason.utf8.prefix(123))
        lws_close_reason(wsi, lws_close_status(rawValue: UInt32(frame.code.rawValue)), &reason, reason.count)
        return -1
    }

    static let writeBudget = 64 * 1024

    // MARK: Inbound

    /// A RECEIVE callback: one chunk of a frame. Reassembles fragments, enforces the size limit, validates text.
    func receive(_ wsi: OpaquePointer, _ data: UnsafeRawPointer?, _ length: Int) -> Int32 {
        if droppingInbound { return 0 }
        if !assembling {
            assembling = true
            inboundKind = lws_frame_is_binary(wsi) != 0 ? .binary : .text
        }
        let maxSize = loop.limits.maxMessageSize
        if inbound.count + length > maxSize {
            return refuseInbound(wsi, WebSocketCloseFrame(code: .messageTooBig, reason: "message exceeds \(maxSize) bytes"))
        }
        let chunk = UnsafeRawBufferPointer(start: data, count: length)
        let bytes: [UInt8]
        if lws_is_final_fragment(wsi) != 0 {
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
        if loop.delivering(on: id, size: bytes.count), !receivingPaused {
            receivingPaused = true
            lws_rx_flow_control(wsi, 0)
        }
        loop.handler(.message(id, WebSocketInboundMessage(kind: inboundKind, bytes: bytes)))
        return 0
    }

    /// Closes with `frame` because of what the peer sent, from the next WRITEABLE callback rather than from this
    /// RECEIVE one: lws 4.1's client freed its receive buffer twice when a RECEIVE callback closed the connection.
    /// What is still queued for the peer is dropped, and so is what it sends meanwhile.
    private func refuseInbound(_ wsi: OpaquePointer, _ frame: WebSocketCloseFrame) -> Int32 {
        droppingInbound = true
        inbound = []
        assembling = false
        dropQueue()
        pendingClose = frame
        closeFrame = frame
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Reads the connection again after a pause (see `ServiceLoop.consumed`).
    func resumeReceiving() {
        guard receivingPaused, let wsi else { return }
        receivingPaused = false
        lws_rx_flow_control(wsi, 1)
    }

    /// The peer's close frame: 2 bytes of code (network order), then the reason.
    func peerClosed(_ data: UnsafeRawPointer?, _ length: Int) {
        guard closeFrame == nil else { return }
        let payload = UnsafeRawBufferPointer(start: data, count: length)
        guard payload.count >= 2 else {
            closeFrame = WebSocketCloseFrame(code: .noStatusReceived)
            return
        }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        closeFrame = WebSocketCloseFrame(
            code: WebSocketCloseCode(rawValue: code), reason: String(decoding: payload.dropFirst(2), as: UTF8.self))
    }
}
