import CLibWebSockets
import Foundation
import Prometheus

/// Answers plain HTTP requests on the WebSocket port: `/healthz`, `/metrics`, static files, else 404.
struct HTTPRouter: Sendable {
    let registry: PrometheusCollectorRegistry
    /// Absolute, standardized; `nil` serves no files.
    let staticDirectory: String?
    /// The `status` of `/healthz`; nil: `ok`.
    let healthStatus: (@Sendable () -> String)?

    func respond(isGet: Bool, path: String, openConnections: Int) -> HTTPResponse {
        guard isGet else { return HTTPResponse(status: 404, text: "not found\n") }
        switch path {
        case "/healthz":
            return HTTPResponse(
                status: 200, contentType: "application/json",
                body: Array(#"{"status":"\#(healthStatus?() ?? "ok")","connections":\#(openConnections)}"#.utf8))
        case "/metrics":
            return HTTPResponse(
                status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: registry.emitToBuffer())
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
