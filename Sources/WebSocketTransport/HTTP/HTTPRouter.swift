import Foundation

/// Answers plain HTTP requests on the WebSocket port: `/healthz`, `/metrics`, static files, else 404.
struct HTTPRouter: Sendable {
    /// The `/metrics` body, rendered by the metrics backend the application chose; `nil` answers 404.
    let metricsPage: (@Sendable () -> [UInt8])?
    /// Who may read `/metrics` (`/healthz` is for load balancers, which seldom send a token: it is open).
    let access: EndpointAccess
    /// `nil` serves no files.
    let staticFiles: StaticFiles?
    /// The `status` of `/healthz`; nil: `ok`.
    let healthStatus: (@Sendable () -> String)?
    /// The application's API, if it has one: requests under its prefix go to it.
    var api: HTTPAPI? = nil

    /// What the router needs of a request.
    struct Request {
        /// GET or HEAD; anything else is answered 404.
        var isGet: Bool
        var isHead: Bool
        var path: String
        /// The client's IP address.
        var peer: String
        var authorization: String?
        var ifNoneMatch: String?
        /// The `Host` header, for the WebSocket address the page's Content-Security-Policy allows.
        var host: String?
    }

    func respond(to request: Request, openConnections: Int) -> HTTPResponse {
        let response = route(request, openConnections: openConnections)
        if request.isHead { response.omitsBody = true }
        return response
    }

    private func route(_ request: Request, openConnections: Int) -> HTTPResponse {
        guard request.isGet || request.isHead else { return HTTPResponse(status: 404, text: "not found\n") }
        switch request.path {
        case "/healthz":
            return HTTPResponse(
                status: 200, contentType: "application/json",
                body: Array(#"{"status":"\#(healthStatus?() ?? "ok")","connections":\#(openConnections)}"#.utf8))
        case "/metrics":
            guard access.allows(peer: request.peer, authorization: request.authorization) else {
                return HTTPResponse(
                    status: 403, text: "forbidden: /metrics is served to loopback (or with its token)\n")
            }
            guard let metricsPage else { return HTTPResponse(status: 404, text: "not found\n") }
            return HTTPResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsPage())
        default:
            guard let file = staticFiles?.file(at: request.path) else {
                return HTTPResponse(status: 404, text: "not found\n")
            }
            let tag = file.entityTag
            let notModified = request.ifNoneMatch.map { Self.matches($0, tag) } ?? false
            // A 304 says the length a 200 would, and sends no body.
            let response = HTTPResponse(
                status: notModified ? 304 : 200, contentType: ContentType.forPath(file.path), body: file.contents)
            response.headers = [("etag", tag), ("cache-control", "no-cache")] + Self.pageHeaders(host: request.host)
            if notModified { response.omitsBody = true }
            return response
        }
    }

    /// Whether an `If-None-Match` list names `tag` (or is `*`); weak tags compare as their strong ones.
    static func matches(_ ifNoneMatch: String, _ tag: String) -> Bool {
        ifNoneMatch.split(separator: ",").contains { candidate in
            let value = candidate.trimmingCharacters(in: .whitespaces)
            return value == "*" || (value.hasPrefix("W/") ? String(value.dropFirst(2)) : value) == tag
        }
    }

    /// What a served web app should say about itself: scripts and connections from this server only (its own
    /// WebSocket address by the `Host` the browser used), never framed, no MIME sniffing, no full URLs to others.
    static func pageHeaders(host: String?) -> [(name: String, value: String)] {
        // Only a plain host[:port] goes into the policy; anything else (a forged header) keeps it at 'self'.
        let sockets =
            host.flatMap { host in
                host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]".contains($0)) }) && !host.isEmpty
                    ? " ws://\(host) wss://\(host)" : nil
            } ?? ""
        return [
            (
                "content-security-policy",
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'\(sockets); "
                    + "base-uri 'none'; form-action 'self'; object-src 'none'; frame-ancestors 'none'"
            ),
            ("x-content-type-options", "nosniff"),
            ("referrer-policy", "no-referrer"),
        ]
    }
}
