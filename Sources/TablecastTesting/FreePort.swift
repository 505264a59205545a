import Foundation

/// A loopback TCP port nobody had bound a moment ago, for a server a test or benchmark starts.
///
/// Picked below the kernel's ephemeral range: a port from `bind(0)` is an ephemeral one, which an outgoing
/// connection may take before the server binds it.
public enum FreePort {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static func find() throws -> Int {
        let ranges = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let ephemeral = max(10_001, ranges.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768)
        for _ in 0..<100 {
            let port = Int.random(in: 10_000..<ephemeral)
            if isFree(port) { return port }
        }
        throw Failure(description: "no free loopback port between 10000 and \(ephemeral) in 100 tries")
    }

    private static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
