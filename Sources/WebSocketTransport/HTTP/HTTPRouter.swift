import CLibWebSockets
import Foundation

/// Answers plain HTTP requests on the WebSocket port: `/healthz`, `/metrics`, static files, else 404.
struct HTTPRouter: Sendable {
    /// The `/metrics` body, rendered by the metrics backend the application chose; `nil` answers 404.
    let metricsPage: (@Sendable () -> [UInt8])?
    /// Who may read `/healthz` and `/metrics`.
    let access: EndpointAccess
    /// Absolute, standardized; `nil` serves no files.
    let staticDirectory: String?
    /// The `status` of `/healthz`; nil: `ok`.
    let healthStatus: (@Sendable () -> String)?

    /// - Parameters:
    ///   - peer: the client's IP address; `authorization`: its `Authorization` header, if any.
    func respond(isGet: Bool, path: String, peer: String, authorization: String?, openConnections: Int) -> HTTPResponse {
        guard isGet else { return HTTPResponse(status: 404, text: "not found\n") }
        switch path {
        case "/healthz", "/metrics":
            guard access.allows(peer: peer, authorization: authorization) else {
                return HTTPResponse(status: 403, text: "forbidden: \(path) is served to loopback (or with its token)\n")
            }
            if path == "/healthz" {
                return HTTPResponse(
                    status: 200, contentType: "application/json",
                    body: Array(#"{"status":"\#(healthStatus?() ?? "ok")","connections":\#(openConnections)}"#.utf8))
            }
            guard let metricsPage else { return HTTPResponse(status: 404, text: "not found\n") }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: metricsPage())
        default:
            return staticFile(path) ?? HTTPResponse(status: 404, text: "not found\n")
        }
    }

    /// Files are read on the service thread: fine for a browser client's few small files, not for large media.
    private func staticFile(_ path: String) -> HTTPResponse? {
        guard let staticDirectory, path.hasPrefix("/") else { return nil }
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        guard !components.contains(where: { $0 == ".." || $0 == "." || $0.contains("\0") }) else { return nil }
        var file = staticDirectory + "/" + components.joined(separator: "/")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else { return nil }
        if isDirectory.boolValue { file += "/index.html" }
        guard let contents = FileManager.default.contents(atPath: file) else { return nil }
        return HTTPResponse(status: 200, contentType: ContentType.forPath(file), body: contents)
    }
}
