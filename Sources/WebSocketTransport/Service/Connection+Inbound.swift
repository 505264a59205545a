import CLibWebSockets
import DequeModule
import Dispatch
import Glibc

/// Closing and reading: what a connection does with its peer's bytes and with its end. Like the rest of it, only
/// the service thread runs this.
extension Connection {
    // MARK: Closing

    /// The connection will close: what the peer sends from now on is read and dropped, not delivered (a paused
    /// connection is read again), so that a peer still sending is not left blocked with our close frame unread
    /// behind what it sent. Its close frame is still found among what it sends (see `FrameParser.skipsData`).
    func beginClosing() {
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
    func linger(_ wsi: OpaquePointer) {
        guard !lingering else { return }
        lingering = true
        guard !peerDone, reader != nil else { return endLingering(wsi) }
        loop.endLinger(of: self)
    }

    /// `lingerSeconds` are over (see ``ServiceLoop/endLinger(of:)``): closes the socket unless it closed.
    func lingerExpired() {
        guard lingering, reader != nil, let wsi else { return }
        endLingering(wsi)
    }

    /// Closes the socket (lws shuts down our side and closes it, sending nothing more: it was given no close reason).
    private func endLingering(_ wsi: OpaquePointer) {
        stopReading()
        loop.closeSoon(self)
    }

    /// The peer's close frame or end of stream after we started closing: the socket closes once our close frame
    /// is out.
    private func peerFinished(_ wsi: OpaquePointer) {
        peerDone = true
        droppingInbound = true
        if lingering { endLingering(wsi) }
    }

    static let lingerSeconds = 2
    static let lingerBytes = 1 << 20

    static let writeBudget = 64 * 1024

    // MARK: Inbound

    /// Takes reading over from lws once the connection is established. lws 4.1's server acts on a frame header
    /// before any callback sees it, accepting unmasked frames and non-minimal lengths and dropping the connection
    /// without a close frame for an oversized control frame or a length with its top bit set; its client parses
    /// frames a byte at a time (~70 instructions a byte). A libev watcher on the socket reads it instead (through
    /// OpenSSL on a TLS connection), `FrameParser` applies RFC 6455 §5, and lws keeps the handshake, the writing,
    /// and closing the socket.
    func startReading(_ wsi: OpaquePointer) {
        lws_rx_flow_control(wsi, 0)
        reader = CLibWebSockets_newReader(
            lws_get_socket_fd(wsi),
            { context in
                guard let context else { return }
                Unmanaged<Connection>.fromOpaque(context).takeUnretainedValue().readable()
            }, Unmanaged.passUnretained(self).toOpaque())
        guard let reader else { return }
        CLibWebSockets_startReader(loop.eventLoop, reader)
        // lws may hold bytes that came with the upgrade request (or, client role, behind the server's 101 response),
        // and OpenSSL decrypted ones: read them at once (from the next loop iteration: lws keeps the bytes once this
        // ESTABLISHED callback has returned).
        mayHaveEarlyInput = true
        CLibWebSockets_feedReader(loop.eventLoop, reader)
    }

    /// Hands the parser what lws read past the handshake: frames a client sent without waiting for the 101 (RFC 6455
    /// has it wait, but they must not be lost), the first frames a server sent with its 101, and half a frame just as
    /// well.
    private func takeEarlyInput(_ wsi: OpaquePointer) {
        mayHaveEarlyInput = false
        guard let offset = loop.inputBuflistOffset(wsi) else { return }
        let buffer = loop.readBuffer
        while case let count = CLibWebSockets_takeBufferedInput(wsi, offset, buffer.baseAddress, buffer.count),
            count > 0
        {
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
            liveness.heardFromPeer()
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
        loop.closeSoon(self)
    }

    /// Handles the whole frames parsed so far, until reading pauses or the connection starts closing.
    private func handleFrames(_ wsi: OpaquePointer) {
        while !receivingPaused, !droppingInbound, closeReply == nil,
            let output = parser.next(assembled: inbound.count, limit: loop.limits.maxMessageSize)
        {
            switch output {
            case .violation(let frame):
                if pendingClose == nil { refuseInbound(wsi, frame) }
                // After a bad header nothing more can be read from the stream, the peer's close frame included; an
                // oversized frame is skipped like any data frame once the connection is closing.
                if frame.code == .protocolError { droppingInbound = true }
            case .frame(let frame):
                switch frame.opcode {
                case .text, .binary:
                    assembling = true
                    inboundKind = frame.opcode == .text ? .text : .binary
                    take(wsi, frame.payload, final: frame.fin)
                case .continuation:
                    take(wsi, frame.payload, final: frame.fin)
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

    /// Adds a chunk of the message being assembled; once `final`, validates and delivers the message.
    private func take(_ wsi: OpaquePointer, _ chunk: [UInt8], final: Bool) {
        let bytes: [UInt8]
        if final {
            if inbound.isEmpty {
                // A whole message in one frame: the frame's payload is the message, not copied again.
                bytes = chunk
            } else {
                inbound.append(contentsOf: chunk)
                bytes = inbound
                inbound = []
            }
            assembling = false
        } else {
            inbound.append(contentsOf: chunk)
            return
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
        // The reader stops itself once the frames in hand are handled.
        if loop.delivering(on: id, size: bytes.count) { receivingPaused = true }
        loop.handler(.message(id, WebSocketInboundMessage(kind: inboundKind, bytes: bytes)))
    }

    /// Closes with `frame` because of what the peer sent, from the next WRITEABLE callback: what is still queued for
    /// the peer is dropped, and what it sends meanwhile is read only for its close frame.
    private func refuseInbound(_ wsi: OpaquePointer, _ frame: WebSocketCloseFrame) {
        inbound = []
        assembling = false
        countAssembling()
        dropQueue()
        pendingClose = frame
        closeFrame = frame
        beginClosing()
        lws_callback_on_writable(wsi)
    }

    /// Reads the connection again after a pause (see `ServiceLoop.consumed`), starting with the frames already
    /// read.
    func resumeReceiving() {
        guard receivingPaused, let wsi, let reader else { return }
        receivingPaused = false
        handleFrames(wsi)
        if !receivingPaused {
            CLibWebSockets_startReader(loop.eventLoop, reader)
            feedIfTLSPending(wsi, reader)
        }
    }

    /// The peer's close frame (2 bytes of code in network order, then a UTF-8 reason), when it is valid, and the
    /// frame to answer it with: its echo, or (RFC 6455 §5.5.1, §7.4) 1002 for a code no endpoint may send or a
    /// 1-byte payload, 1007 for a reason that is not UTF-8. An empty payload is valid and reported as 1005.
    static func answer(toClose payload: UnsafeRawBufferPointer) -> (
        peer: WebSocketCloseFrame?, reply: WebSocketCloseFrame
    ) {
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
        let peer = WebSocketCloseFrame(
            code: WebSocketCloseCode(rawValue: code), reason: String(decoding: reason, as: UTF8.self))
        return (peer, peer)
    }
}

extension ServiceLoop {
    /// Where lws keeps the bytes it read from a connection and did not parse (see
    /// `CLibWebSockets_inputBuflistOffset`): looked for on the first connection, the same for all of them.
    func inputBuflistOffset(_ wsi: OpaquePointer) -> Int? {
        if !buflistOffsetSought {
            buflistOffsetSought = true
            let offset = CLibWebSockets_inputBuflistOffset(wsi)
            buflistOffset = offset > 0 ? offset : nil
            if buflistOffset == nil {
                logger.error(
                    "this libwebsockets keeps its unread input elsewhere: frames sent right behind a handshake are lost"
                )
            }
        }
        return buflistOffset
    }
}
