import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Checks, in debug builds, that an object documented as used by one thread at a time (a SQLite or libpq
/// connection: their C handles are not safe to share) is: a second thread entering while another is inside is a bug,
/// and stops the process there rather than corrupt the handle. The thread inside may enter again (a transaction
/// running its statements). Release builds check nothing and cost nothing.
public final class ExclusiveUse: @unchecked Sendable {
    /// The thread inside (its `pthread_self`), 0 when none.
    private let holder = Atomic<UInt>(0)
    /// How many times the holder entered; touched only by the holder.
    private var depth = 0

    public init() {}

    /// Enters on the calling thread; false (without entering) when another thread is inside.
    public func enter() -> Bool {
        let me = UInt(pthread_self())
        if holder.load(ordering: .acquiring) == me {
            depth += 1
            return true
        }
        guard holder.compareExchange(expected: 0, desired: me, ordering: .acquiring).exchanged else { return false }
        depth = 1
        return true
    }

    /// Leaves once for each ``enter()`` that returned true.
    public func leave() {
        depth -= 1
        if depth == 0 { holder.store(0, ordering: .releasing) }
    }

    /// Runs `body` inside, in debug builds stopping the process if another thread is inside.
    @inline(__always)
    public func checked<T, E: Error>(_ what: StaticString, _ body: () throws(E) -> T) throws(E) -> T {
        #if DEBUG
            precondition(enter(), "\(what) is used by two threads at once")
            defer { leave() }
        #endif
        return try body()
    }
}
