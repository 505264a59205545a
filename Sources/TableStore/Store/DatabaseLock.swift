import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One process's exclusive hold on a database file: a `flock` on `<database>.lock`, which holds the holder's pid.
///
/// SQLite lets any number of processes share a file, but two servers on one file would each commit versions the
/// other does not know of. Every Tablecast process that writes the file (`serve`, `compact`) takes this lock first,
/// so the second one refuses to start and can name the first. The kernel drops the lock when its process ends,
/// however it ends, so a crash leaves no stale lock; the lock file itself stays (removing it would race with a
/// process that just opened it).
public final class DatabaseLock: Sendable {
    /// Why the lock could not be taken.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The lock file.
    public let path: String
    private let descriptor: Mutex<Int32>

    /// Takes the lock of `database`, or throws a ``Failure`` that names the file and, when another process holds
    /// it, that process's pid.
    public init(database: String) throws {
        path = database + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw Failure(description: Self.describeOpenFailure(errno, database: database, lock: path))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let holder = Self.pid(in: fd)
            close(fd)
            guard error == EWOULDBLOCK else {
                throw Failure(description: "cannot lock \(path): \(String(cString: strerror(error)))")
            }
            let who = holder.map { "another Tablecast process (pid \($0))" } ?? "another Tablecast process"
            throw Failure(description: "\(database) is in use by \(who); stop it first (lock file \(path))")
        }
        let text = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
        descriptor = Mutex(fd)
    }

    deinit { release() }

    /// Lets another process take the lock; a no-op the second time.
    public func release() {
        descriptor.withLock { fd in
            guard fd >= 0 else { return }
            close(fd)
            fd = -1
        }
    }

    private static func pid(in fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count].prefix { (0x30...0x39).contains($0) }, as: UTF8.self))
    }

    /// The lock file is created next to the database, so its failure says what is wrong with that folder.
    private static func describeOpenFailure(_ error: Int32, database: String, lock: String) -> String {
        let folder = database.contains("/") ? String(database[..<database.lastIndex(of: "/")!]) : "."
        switch error {
        case ENOENT: return "cannot open \(database): the folder \(folder.isEmpty ? "/" : folder) does not exist"
        case EROFS, EACCES, EPERM:
            return "cannot open \(database): its folder \(folder.isEmpty ? "/" : folder) is read-only "
                + "(\(String(cString: strerror(error))) creating \(lock))"
        default: return "cannot create the lock file \(lock): \(String(cString: strerror(error)))"
        }
    }
}
