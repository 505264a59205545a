import Foundation

/// A plain HTTP/1.1 GET over a real socket: status, headers (lower-cased names) and body.
struct HTTPGet {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    init(port: Int, path: String) throws {
        let socket = try RawSocket(port: port)
        socket.write("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let response = socket.readToEnd()
        let separator = Array("\r\n\r\n".utf8)
        // No response (the connection ended unanswered, or the read timed out) is status 0.
        guard response.count >= separator.count else {
            (status, headers, body) = (0, [:], [])
            return
        }
        let end = (0...(response.count - separator.count)).first { Array(response[$0..<$0 + 4]) == separator } ?? 0
        let lines = String(decoding: response[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        self.headers = headers
        body = Array(response[(end + 4)...])
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}
