import CLibWebSockets
import DequeModule
import Dispatch

/// An API request on the service thread (see ``HTTPAPI``): its body being read, then waiting for the
/// application's answer, then that answer being written or its event stream running. It hangs off the HTTP
/// connection's per-session data as a response does, and is in the loop's `exchanges` once dispatched.
final class HTTPExchange {
    enum State {
        case receiving
        case waiting
        case answering(HTTPResponse, headersWritten: Bool)
        case streaming(HTTPEventStream)
    }

    let id: WebSocketConnectionID
    let wsi: OpaquePointer
    let method: String
    let path: String
    let query: String?
    let headers: [String: String]
    let peer: String
    var body: [UInt8] = []
    var state = State.receiving
    /// The answer closes the connection (the rest of a refused body is not read).
    var closesAfterAnswer = false
    /// Stream: whether its status line and headers are out.
    var streamBegan = false
    /// Stream: frames not written yet, and their bytes (charged to the outbound account).
    var queue: Deque<[UInt8]> = []
    var queuedBytes = 0
    /// Stream: end once the queue is written.
    var ending = false
    /// Whether the application was given the request (and so is told of the end).
    var dispatched = false

    init(
        id: WebSocketConnectionID, wsi: OpaquePointer, method: String, path: String, query: String?,
        headers: [String: String], peer: String
    ) {
        self.id = id
        self.wsi = wsi
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.peer = peer
    }

    var request: HTTPAPIRequest {
        HTTPAPIRequest(
            id: id, method: method, path: path, query: query, headers: headers, body: body, peer: peer)
    }

    /// Answers with `reply` from the next writeable callback.
    func answer(_ reply: HTTPAPIReply) {
        let response = HTTPResponse(status: UInt32(reply.status), contentType: reply.contentType, body: reply.body)
        response.headers = reply.headers.map { ($0.name, $0.value) }
        response.omitsBody = reply.omitsBody || method == "HEAD"
        state = .answering(response, headersWritten: false)
        lws_callback_on_writable(wsi)
    }
}

/// The stream side of an exchange.
extension ServiceLoop {
    /// A message the application sent to exchange `exchange`.
    func deliver(_ message: WebSocketMessage, to exchange: HTTPExchange) {
        guard case .server(let router) = role, let api = router.api else { return }
        switch exchange.state {
        case .waiting:
            api.onEvent(.message(exchange.id, message))
        case .streaming(let stream):
            guard !exchange.ending else { return }
            switch stream.frame(message) {
            case .skip:
                break
            case .refuse(let reply):
                if exchange.streamBegan {
                    end(exchange, WebSocketCloseFrame(code: WebSocketCloseCode(rawValue: 1008), reason: "refused"))
                } else {
                    exchange.answer(reply)
                }
            case .bytes(let bytes):
                enqueue(bytes, on: exchange, stream: stream)
            }
        case .receiving, .answering:
            break
        }
    }

    private func enqueue(_ bytes: [UInt8], on exchange: HTTPExchange, stream: HTTPEventStream) {
        guard exchange.queue.count < limits.maxQueuedMessages,
            exchange.queuedBytes + bytes.count <= limits.maxQueuedBytes
        else {
            metrics?.queueOverflows.increment()
            dropStreamQueue(exchange)
            end(exchange, WebSocketCloseFrame(code: .slowConsumer, reason: "outbound queue overflow"))
            // A reader that stopped reading gets as long as a WebSocket one to take the end.
            lws_set_timeout(exchange.wsi, PENDING_TIMEOUT_CLOSE_SEND, Int32(limits.slowConsumerCloseSeconds))
            return
        }
        exchange.queue.append(bytes)
        exchange.queuedBytes += bytes.count
        budget[.outbound].charge(bytes.count)
        if exchange.queue.count == 1 { lws_callback_on_writable(exchange.wsi) }
    }

    /// Ends a stream with its closing bytes once what is queued is written.
    func end(_ exchange: HTTPExchange, _ frame: WebSocketCloseFrame) {
        guard case .streaming(let stream) = exchange.state else {
            // Not streaming: the connection goes, unanswered.
            killSoon(exchange.wsi, PENDING_TIMEOUT_CLOSE_SEND)
            return
        }
        guard !exchange.ending else { return }
        let closing = stream.closing(frame)
        exchange.queue.append(closing)
        exchange.queuedBytes += closing.count
        budget[.outbound].charge(closing.count)
        exchange.ending = true
        lws_callback_on_writable(exchange.wsi)
    }

    func dropStreamQueue(_ exchange: HTTPExchange) {
        budget[.outbound].release(exchange.queuedBytes)
        exchange.queue.removeAll()
        exchange.queuedBytes = 0
    }

    /// Writes the stream's headers, then what is queued, 16 KiB at a time; -1 once an ended stream is written.
    func writeStream(_ exchange: HTTPExchange, _ stream: HTTPEventStream) -> Int32 {
        let wsi = exchange.wsi
        if !exchange.streamBegan {
            exchange.streamBegan = true
            let response = HTTPResponse(status: 200, contentType: "text/event-stream", body: [UInt8]())
            response.streams = true
            response.headers =
                [("cache-control", "no-cache"), ("x-accel-buffering", "no")]
                + stream.headers.map { ($0.name, $0.value) }
            guard response.writeHeaders(wsi) else { return -1 }
            // No timeout for a stream: its heartbeat keeps it alive, and its close says when it is gone.
            lws_http_mark_sse(wsi)
            heartbeatsDue.add(exchange.id, at: DispatchTime.now().uptimeNanoseconds)
            if !exchange.queue.isEmpty || exchange.ending { lws_callback_on_writable(wsi) }
            return 0
        }
        var chunk = [UInt8](repeating: 0, count: WebSocketMessage.headroom)
        while let next = exchange.queue.first,
            chunk.count == WebSocketMessage.headroom || chunk.count + next.count < 16 * 1024
        {
            chunk.append(contentsOf: next)
            exchange.queue.removeFirst()
            exchange.queuedBytes -= next.count
            budget[.outbound].release(next.count)
        }
        let count = chunk.count - WebSocketMessage.headroom
        if count > 0 {
            let written = chunk.withUnsafeMutableBufferPointer {
                lws_write(wsi, $0.baseAddress! + WebSocketMessage.headroom, count, LWS_WRITE_HTTP)
            }
            guard written >= 0 else { return -1 }
        }
        if !exchange.queue.isEmpty {
            lws_callback_on_writable(wsi)
        } else if exchange.ending {
            return -1
        }
        return 0
    }

    /// Each stream whose heartbeat is due writes it, when nothing else is waiting to be written, and is due again an
    /// interval later. Not lws timers, which lws inserts in its sorted list behind every other stream's (O(streams)
    /// each, see `Liveness`).
    func writeDueHeartbeats(at now: UInt64) {
        while let id = heartbeatsDue.popDue(at: now) {
            // A stream that ended is gone from `exchanges`.
            guard let exchange = exchanges[id], case .streaming(let stream) = exchange.state, !exchange.ending
            else { continue }
            if exchange.queue.isEmpty { enqueue(stream.heartbeat, on: exchange, stream: stream) }
            heartbeatsDue.add(id, at: now)
        }
    }
}
