import XCTest

@testable import TablecastServer

final class RefRegistryTests: XCTestCase {
    /// A commit that lands after the client's last connection closed records its ref; that must not make the
    /// client look loaded, or its older stored refs would never be loaded and their retries applied again.
    func testRecordAloneDoesNotCountAsLoaded() {
        let registry = RefRegistry(limit: 10)
        registry.load("c", refs: ["a"])
        XCTAssertTrue(registry.isLoaded("c"))
        registry.forget("c")
        registry.record("c", "b")
        XCTAssertFalse(registry.isLoaded("c"))
        XCTAssertTrue(registry.contains("c", "b"))
        registry.load("c", refs: ["a", "b"])
        XCTAssertTrue(registry.isLoaded("c"))
        XCTAssertTrue(registry.contains("c", "a"))
        XCTAssertTrue(registry.contains("c", "b"))
    }

    func testKeepsTheLatestRefsUpToTheLimit() {
        let registry = RefRegistry(limit: 3)
        registry.load("c", refs: [])
        for ref in ["1", "2", "3", "4", "5"] { registry.record("c", ref) }
        XCTAssertEqual(["1", "2", "3", "4", "5"].map { registry.contains("c", $0) }, [false, false, true, true, true])
    }

    /// Recording is in place: 100,000 records against a full registry take well under a second (a copy of the
    /// set per record, as before, took minutes).
    func testRecordingIsConstantTime() {
        let registry = RefRegistry(limit: 10_000)
        registry.load("c", refs: [])
        let start = ContinuousClock.now
        for n in 0..<100_000 { registry.record("c", String(n)) }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        XCTAssertTrue(registry.contains("c", "99999"))
        XCTAssertFalse(registry.contains("c", "89999"))
    }
}
