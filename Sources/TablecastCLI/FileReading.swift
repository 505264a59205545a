import Foundation

/// A file that could not be read, with the operating system's reason.
struct FileReadError: Error, CustomStringConvertible {
    let description: String
}

/// The bytes of the file at `path`; `what` names it in the error (e.g. "the tokens file"), which says why it could not
/// be read: "cannot read the tokens file t.json: No such file or directory".
func readFile(_ path: String, what: String) throws -> [UInt8] {
    let named = what.isEmpty ? path : "\(what) \(path)"
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw FileReadError(description: "cannot read \(named): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count == 0 { return bytes }
        if count < 0 {
            if errno == EINTR { continue }
            throw FileReadError(description: "cannot read \(named): \(String(cString: strerror(errno)))")
        }
        bytes += chunk[..<count]
    }
}
