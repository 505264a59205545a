import Foundation

/// A server under test, run as a child process on a free loopback port, killed when done.
final class ServerProcess {
    let name: String
    let port: Int
    private let process = Process()
    var pid: Int32 { process.processIdentifier }

    init(name: String, executable: String, arguments: [String], port: Int) throws {
        self.name = name
        self.port = port
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitUntilListening()
    }

    /// The CPU time the server has used so far (user + system, from `/proc/PID/stat`), in seconds.
    var cpuSeconds: Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let afterName = stat.lastIndex(of: ")")
        else { return .nan }
        // Fields after the parenthesized name, from field 3 (state): utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: afterName)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return .nan }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// SIGINT (the lws test server ignores SIGTERM), then SIGKILL if it has not exited within two seconds.
    func stop() {
        kill(process.processIdentifier, SIGINT)
        for _ in 0..<200 where process.isRunning { usleep(10_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    private func waitUntilListening() throws {
        for _ in 0..<500 {
            if Self.canConnect(port: port) { return }
            usleep(10_000)
        }
        stop()
        throw BenchError("\(name) did not start listening on port \(port)")
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
