import CoreMetrics
import Foundation
import Synchronization
import TableModel
import TablecastProtocol
import WebSocketTransport

/// Serves the HTTP API (`/v1/`, see `web-client-protocol/openapi.yaml`) through the router, as a WebSocket client
/// would be served: each request becomes a short session of its own, opened, sent a `hello` with the request's
/// bearer token and then the one request its route stands for (see ``APIRequest``), and closed when the exchange
/// ends. What the server sends that session (the welcome, then the answer) comes back here and becomes the HTTP
/// response; for `/events`, its subscription's messages become server-sent events. Access, pacing, refs and every
/// table's work are the router's and the tables' own, with nothing copied.
///
/// An HTTP caller's client id is ``clientID`` within its token's principal, so its `Idempotency-Key`s are refs
/// kept in the store as any stable client's, across requests, restarts and nodes.
final class HTTPGateway: Sendable {
    /// The client id every HTTP request says hello with.
    static let clientID = "http"
    static let helloRef = "hello"

    private struct Pending {
        var route: APIRoute
        var ifNoneMatch: String?
        var cors: [HTTPHeader]
        /// `GET /v1/tables/{t}`: the snapshot its refresh sent, answered once `refreshed` says it is the current
        /// version. A refresh may instead get an older shared snapshot and the updates after it: then the current
        /// version is asked for as `snapshotAt`.
        var held: [String: JSONValue]? = nil
        /// The `snapshotAt` was sent: its answer is the response.
        var refetching = false
    }

    private let router: RouterEvents
    /// Nil until the server listens (its own origins name its port): until then, browsers are refused.
    private let origins: @Sendable () -> OriginPolicy?
    private let openAPIDocument: [UInt8]
    private let openAPISchemas: [String: [UInt8]]
    private let factory: any MetricsFactory
    private let transport = Mutex<WebSocketServer?>(nil)
    private let pending = Mutex<[WebSocketConnectionID: Pending]>([:])
    private let counters = Mutex<[Int: Counter]>([:])
    private let anchors = SessionAnchors()
    /// Requests per second one caller may make: a WebSocket connection's pace, shared by every request with the
    /// same bearer token (or, without one, from the same address), since each request is a session of its own.
    private let requestsPerSecond: Int
    private let buckets = Mutex<[String: TokenBucket]>([:])
    /// Callers whose buckets are kept; past it, all are forgotten (each then starts with a full bucket).
    static let maxCallersPaced = 10_000

    init(
        router: RouterEvents, origins: @escaping @Sendable () -> OriginPolicy?,
        openAPIDocument: [UInt8], openAPISchemas: [String: [UInt8]], requestsPerSecond: Int,
        factory: any MetricsFactory
    ) {
        self.requestsPerSecond = requestsPerSecond
        self.router = router
        self.origins = origins
        self.openAPIDocument = openAPIDocument
        self.openAPISchemas = openAPISchemas
        self.factory = factory
    }

    /// The transport to answer through, once it exists (it is created with this gateway's handler).
    func attach(_ server: WebSocketServer) {
        transport.withLock { $0 = server }
    }

    /// The transport's answer to a request the server did not answer within `timeout`: 503 `unavailable`, with
    /// `Retry-After` and the request's CORS headers. A change may still be committed later, so for one the message
    /// says to retry with the same `Idempotency-Key`; the request's id finds the transport's log line.
    func timeoutReply(_ request: HTTPAPIRequest, after timeout: Duration) -> HTTPAPIReply {
        let cors = pending.withLock { $0[request.id]?.cors } ?? []
        let seconds = timeout / .seconds(1)
        let advice =
            request.method == "GET" || request.method == "HEAD"
            ? "try again" : "it may still take effect; retry it with the same Idempotency-Key"
        let error = ProtocolError(
            .unavailable, "no answer within \(String(format: "%g", seconds)) s (request \(request.id)): \(advice)")
        return APIStatus.reply(error, headers: cors)
    }

    /// The transport's API handler (service thread: quick).
    func handle(_ event: HTTPAPIEvent) {
        switch event {
        case .request(let request): begin(request)
        case .message(let id, let message): answer(id, message)
        case .ended(let id):
            // Also for a request refused here, whose session the router never opened: it ignores that close.
            pending.withLock { _ = $0.removeValue(forKey: id) }
            router.yield(.transport(.closed(id, WebSocketCloseFrame(code: .normalClosure, reason: ""))))
        }
    }

    private func begin(_ request: HTTPAPIRequest) {
        let origin = request.headers["origin"]
        if let origin, origins()?.allows(origin: origin, host: request.headers["host"]) != true {
            return reply(request.id, APIStatus.reply(ProtocolError(.forbidden, "origin \(origin) is not allowed")))
        }
        let cors = origin.map { Self.corsHeaders(origin: $0) } ?? []
        if request.method == "OPTIONS" {
            return reply(request.id, Self.preflight(cors: cors))
        }
        let route: APIRoute
        switch APIRoute.parse(method: request.method, path: request.path, query: request.query) {
        case .success(let parsed): route = parsed
        case .failure(let refusal):
            var headers = cors
            if case .methodNotAllowed(_, _, let allowed) = refusal {
                headers.append(HTTPHeader("allow", allowed.joined(separator: ", ")))
            }
            return reply(request.id, APIStatus.reply(refusal.error, status: refusal.status, headers: headers))
        }
        if case .schema(let name) = route {
            guard let schema = openAPISchemas[name] else {
                let refusal = APIRefusal.notFound(request.path)
                return reply(request.id, APIStatus.reply(refusal.error, status: refusal.status, headers: cors))
            }
            return reply(
                request.id,
                HTTPAPIReply(status: 200, contentType: "application/schema+json", headers: cors, body: schema))
        }
        if route == .openAPI {
            return reply(
                request.id,
                HTTPAPIReply(
                    status: 200, contentType: "application/yaml; charset=utf-8", headers: cors, body: openAPIDocument))
        }
        if request.method == "POST" || request.method == "PATCH" {
            let type = request.headers["content-type"]?.lowercased() ?? ""
            guard type.hasPrefix("application/json") else {
                let error = ProtocolError(
                    .badRequest, "the body must be JSON: send Content-Type: application/json (not '\(type)')")
                return reply(request.id, APIStatus.reply(error, status: 415, headers: cors))
            }
        }
        var token: String?
        if let authorization = request.headers["authorization"] {
            guard authorization.lowercased().hasPrefix("bearer ") else {
                let error = ProtocolError(.unauthorized, "the Authorization header must be 'Bearer <token>'")
                return reply(request.id, APIStatus.reply(error, headers: cors))
            }
            token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        guard pace(token.map { "token " + $0 } ?? "peer " + request.peer) else {
            let error = ProtocolError(
                .rateLimited,
                "more than \(requestsPerSecond) requests per second with this token (or from this address)")
            return reply(request.id, APIStatus.reply(error, headers: cors))
        }
        let resume = request.headers["last-event-id"].flatMap(EventStreamPosition.init(lastEventID:))
        let message: JSONValue
        switch APIRequest.message(
            for: route, body: request.body, idempotencyKey: request.headers["idempotency-key"], resume: resume)
        {
        case .success(let built): message = built
        case .failure(let error): return reply(request.id, APIStatus.reply(error, headers: cors))
        }
        pending.withLock {
            $0[request.id] = Pending(route: route, ifNoneMatch: request.headers["if-none-match"], cors: cors)
        }
        if case .events = route {
            transport.withLock { $0 }?.stream(request.id, EventStream.make(cors: cors, resume: resume))
        }
        for event in anchors.touch(token: token, now: ProcessInfo.processInfo.systemUptime) { router.yield(event) }
        let id = request.id
        router.yield(
            .transport(
                .opened(
                    WebSocketConnectionInfo(
                        id: id, remoteAddress: request.peer, path: request.path, query: request.query, origin: nil,
                        subprotocol: nil, host: request.headers["host"]))))
        router.yield(.transport(.message(id, Self.hello(token: token))))
        router.yield(.transport(.message(id, WebSocketInboundMessage(kind: .text, bytes: message.jsonBytes))))
    }

    /// A message the server sent the exchange's session while it waits for its answer.
    private func answer(_ id: WebSocketConnectionID, _ message: WebSocketMessage) {
        let bytes = message.withUnsafeBytes { Array($0) }
        guard case .object(var fields)? = try? JSONValue(parsing: bytes), case .string(let type)? = fields["type"],
            let exchange = pending.withLock({ $0[id] })
        else { return }
        switch type {
        case "welcome", "presence", "subscribed", "unsubscribed", "update":
            return
        case "error":
            return reply(id, APIStatus.reply(Self.error(fields), headers: exchange.cors))
        case "snapshot" where exchange.route.isSnapshot && !exchange.refetching:
            pending.withLock { $0[id]?.held = fields }
            return
        case "refreshed":
            guard case .snapshot(let table) = exchange.route, case .number(let version)? = fields["version"] else {
                return
            }
            guard let held = exchange.held, held["version"] == .number(version) else {
                let snapshotAt: JSONValue = [
                    "type": "snapshotAt", "table": .string(table), "version": .number(version),
                    "ref": .string(APIRequest.ref),
                ]
                pending.withLock { $0[id]?.refetching = true }
                router.yield(
                    .transport(.message(id, WebSocketInboundMessage(kind: .text, bytes: snapshotAt.jsonBytes))))
                return
            }
            fields = held
        default:
            break
        }
        // The answer as the WebSocket has it (so the protocol's schemas describe it), without the session's ref.
        fields["ref"] = nil
        if exchange.route.isSnapshot { fields["historical"] = nil }
        var headers = exchange.cors
        var status = exchange.route == .createTable ? 201 : 200
        if case .number(let version)? = fields["version"], case .string(let epoch)? = fields["epoch"],
            type == "snapshot" || exchange.route.isSnapshot
        {
            let tag = "\"\(epoch):\(UInt64(version))\""
            headers.append(HTTPHeader("etag", tag))
            if case .snapshot = exchange.route, let ifNoneMatch = exchange.ifNoneMatch,
                Self.matches(ifNoneMatch, tag)
            {
                status = 304
            }
        }
        reply(
            id,
            HTTPAPIReply(
                status: status, headers: headers, body: JSONValue.object(fields).jsonBytes, omitsBody: status == 304))
    }

    /// The hello every request's session (and anchor) says.
    static func hello(token: String?) -> WebSocketInboundMessage {
        var hello: [String: JSONValue] = ["type": "hello", "client": .string(clientID), "ref": .string(helloRef)]
        if let token { hello["token"] = .string(token) }
        return WebSocketInboundMessage(kind: .text, bytes: JSONValue.object(hello).jsonBytes)
    }

    /// Takes a token from `caller`'s bucket.
    private func pace(_ caller: String) -> Bool {
        let seconds = ProcessInfo.processInfo.systemUptime
        return buckets.withLock { buckets in
            if buckets.count >= Self.maxCallersPaced, buckets[caller] == nil { buckets.removeAll() }
            return buckets[
                caller,
                default: TokenBucket(rate: Double(requestsPerSecond), burst: Double(requestsPerSecond))
            ].take(now: seconds)
        }
    }

    private func reply(_ id: WebSocketConnectionID, _ reply: HTTPAPIReply) {
        pending.withLock { _ = $0.removeValue(forKey: id) }
        count(reply.status)
        transport.withLock { $0 }?.respond(id, reply)
    }

    /// Counts a response by status (`tablecast_http_api_responses_total`); event streams count as 200 once begun.
    func count(_ status: Int) {
        let counter = counters.withLock { counters in
            if let counter = counters[status] { return counter }
            let counter = Counter(
                label: "tablecast_http_api_responses_total", dimensions: [("status", String(status))], factory: factory)
            counters[status] = counter
            return counter
        }
        counter.increment()
    }

    /// An `error` message's refusal.
    static func error(_ fields: [String: JSONValue]) -> ProtocolError {
        guard case .string(let code)? = fields["code"], case .string(let message)? = fields["message"] else {
            return ProtocolError(.internal, "the server's answer could not be read")
        }
        var at: String?
        if case .string(let entry)? = fields["at"] { at = entry }
        return ProtocolError(ProtocolError.Code(rawValue: code) ?? .internal, message, at: at)
    }

    /// Whether an `If-None-Match` list names `tag` (or is `*`); weak tags compare as their strong ones.
    static func matches(_ ifNoneMatch: String, _ tag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            let value = candidate.trimmingCharacters(in: .whitespaces)
            return value == "*" || (value.hasPrefix("W/") ? String(value.dropFirst(2)) : value) == tag
        }
    }

    static func corsHeaders(origin: String) -> [HTTPHeader] {
        [
            HTTPHeader("access-control-allow-origin", origin), HTTPHeader("vary", "Origin"),
            HTTPHeader("access-control-expose-headers", "ETag, Retry-After"),
        ]
    }

    /// The answer to a CORS preflight from an allowed origin.
    static func preflight(cors: [HTTPHeader]) -> HTTPAPIReply {
        HTTPAPIReply(
            status: 204, contentType: "text/plain",
            headers: cors + [
                HTTPHeader("access-control-allow-methods", "GET, POST, PATCH, DELETE, OPTIONS"),
                HTTPHeader(
                    "access-control-allow-headers",
                    "Authorization, Content-Type, Idempotency-Key, If-None-Match, Last-Event-ID"),
                HTTPHeader("access-control-max-age", "600"),
            ])
    }
}
