import TablecastClient

/// Why a client is reconnecting, in words for a person: libwebsockets' terse texts (`Unable to connect`,
/// `read failed`, an OpenSSL error number) made specific by a look at the server, with what usually causes them.
enum ReconnectReason {
    static func text(_ problem: String, url: String) async -> String {
        if problem.contains("Unable to connect") || problem.contains("ECONNREFUSED"),
            let first = url.split(separator: ",").first, let endpoint = try? TablecastClient.parse(String(first)),
            let found = await ConnectionProbe.problem(host: endpoint.host, port: endpoint.port, within: 1)
        {
            return found.hasPrefix(ConnectionProbe.refused) ? "\(found): is the server running?" : found
        }
        if problem.contains("SSL") && url.hasPrefix("wss://") {
            return "\(problem) (if the server serves plain ws, use ws://)"
        }
        if problem.contains("read failed") && url.hasPrefix("ws://") {
            return "\(problem) (if the server serves TLS, use wss://)"
        }
        return problem
    }
}
