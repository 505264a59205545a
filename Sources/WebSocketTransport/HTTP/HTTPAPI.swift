/// The application's HTTP API on the server's port: requests under `prefix` are handed to `onEvent` with their
/// bodies, and answered later (``WebSocketServer/respond(_:_:)``) or turned into an event stream
/// (``WebSocketServer/stream(_:_:)``). An exchange has an id from the same space as connections: what the
/// application sends to it with ``WebSocketServer/send(_:to:)`` comes back as ``HTTPAPIEvent/message(_:_:)``
/// while it waits for its answer, and is framed by its stream once it streams.
public struct HTTPAPI: Sendable {
    /// Paths that start with it are the API's (`/v1/`).
    public var prefix: String
    /// A bigger request body is refused with 413.
    public var maxBodyBytes: Int
    /// How often a stream with nothing to say writes its heartbeat.
    public var heartbeat: Duration
    /// How long the application may take to answer a request (or start its stream) before the transport answers
    /// with `timeoutReply` in its place (checked at each of the loop's wake-ups, at least every 0.1 s).
    public var answerTimeout: Duration
    /// The answer to a request the application did not answer within `answerTimeout` (called on the service thread;
    /// the request's body is not kept). The application's own answer, if it comes later, is dropped.
    public var timeoutReply: @Sendable (HTTPAPIRequest) -> HTTPAPIReply
    /// Called on the service thread; must return quickly (see ``WebSocketEventHandler``).
    public var onEvent: @Sendable (HTTPAPIEvent) -> Void

    public init(
        prefix: String, maxBodyBytes: Int, heartbeat: Duration = .seconds(15), answerTimeout: Duration = .seconds(120),
        timeoutReply: @escaping @Sendable (HTTPAPIRequest) -> HTTPAPIReply = HTTPAPI.plainTimeoutReply,
        onEvent: @escaping @Sendable (HTTPAPIEvent) -> Void
    ) {
        self.prefix = prefix
        self.maxBodyBytes = maxBodyBytes
        self.heartbeat = heartbeat
        self.answerTimeout = answerTimeout
        self.timeoutReply = timeoutReply
        self.onEvent = onEvent
    }

    /// 503 with `{"code":"unavailable","message":"no answer within the server's time"}`.
    public static let plainTimeoutReply: @Sendable (HTTPAPIRequest) -> HTTPAPIReply = { _ in
        HTTPAPIReply(
            status: 503, body: Array(#"{"code":"unavailable","message":"no answer within the server's time"}"#.utf8))
    }
}

/// What happens to an API exchange: its request, what the application sent to it while it waited for its
/// answer, and its end (answered, or its connection closed), after which its id is unknown.
public enum HTTPAPIEvent: Sendable {
    case request(HTTPAPIRequest)
    case message(WebSocketConnectionID, WebSocketMessage)
    case ended(WebSocketConnectionID)
}

/// A complete request under the API's prefix.
public struct HTTPAPIRequest: Sendable {
    public let id: WebSocketConnectionID
    /// `GET`, `POST`, `PATCH`, `PUT`, `DELETE`, `OPTIONS` or `HEAD`.
    public let method: String
    /// Without the query.
    public let path: String
    /// The query string (`from=1&limit=5`), nil when there is none.
    public let query: String?
    /// The headers an API reads, by lower-case name: `authorization`, `content-type`, `if-none-match`,
    /// `idempotency-key`, `last-event-id`, `origin`, `host`, `access-control-request-method` and
    /// `access-control-request-headers`.
    public let headers: [String: String]
    public let body: [UInt8]
    /// The client's IP address.
    public let peer: String

    public init(
        id: WebSocketConnectionID, method: String, path: String, query: String?, headers: [String: String],
        body: [UInt8], peer: String
    ) {
        self.id = id
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.peer = peer
    }
}

/// A complete answer to an API request.
public struct HTTPAPIReply: Sendable {
    public var status: Int
    public var contentType: String
    /// Headers besides type and length, names in lower case.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Headers only (HEAD, 304).
    public var omitsBody: Bool

    public init(
        status: Int, contentType: String = "application/json", headers: [HTTPHeader] = [], body: [UInt8] = [],
        omitsBody: Bool = false
    ) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
        self.omitsBody = omitsBody
    }
}

/// One response header.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// How an exchange streams (server-sent events): each message sent to it is framed by `frame`; the stream's
/// status line and headers (200, `text/event-stream`) go out before the first frame, unless the first message
/// is refused instead. Like a WebSocket connection's, its queue is bounded: a reader that falls behind gets
/// `closing` of a ``WebSocketCloseCode/slowConsumer`` frame and the end of the stream.
public struct HTTPEventStream: Sendable {
    /// What a message becomes on the stream.
    public enum Frame: Sendable {
        case bytes([UInt8])
        /// Nothing.
        case skip
        /// Answer with this instead of streaming; once the stream has begun, it ends the stream.
        case refuse(HTTPAPIReply)
    }

    public var headers: [HTTPHeader]
    public var frame: @Sendable (WebSocketMessage) -> Frame
    /// The last bytes of a stream the server ends (``WebSocketServer/close(_:code:reason:)``, a slow reader).
    public var closing: @Sendable (WebSocketCloseFrame) -> [UInt8]
    /// Written when the stream had nothing to say for the API's heartbeat interval.
    public var heartbeat: [UInt8]

    public init(
        headers: [HTTPHeader], heartbeat: [UInt8], frame: @escaping @Sendable (WebSocketMessage) -> Frame,
        closing: @escaping @Sendable (WebSocketCloseFrame) -> [UInt8]
    ) {
        self.headers = headers
        self.heartbeat = heartbeat
        self.frame = frame
        self.closing = closing
    }
}
