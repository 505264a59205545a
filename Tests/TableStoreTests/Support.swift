import Foundation
import XCTest

@testable import TableStore

/// A fresh directory under the system's temporary directory, removed when the test ends.
func makeTemporaryDirectory(for test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("tablestore-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// A record with predictable texts, so tests can check what comes back.
func record(
    _ table: String, _ version: Int64, client: String = "alice", ref: String? = nil, snapshot: String? = nil
) -> CommitRecord {
    CommitRecord(
        table: table, version: version, batch: "{\"v\":\(version)}", originClient: client, originRef: ref,
        time: 1_700_000_000_000 + version, ack: ref.map { "{\"ref\":\"\($0)\",\"version\":\(version)}" } ?? "",
        snapshot: snapshot)
}

/// Records for `versions` of `table`, each from alice with ref "<table>-r<version>".
func records(_ table: String, _ versions: ClosedRange<Int64>) -> [CommitRecord] {
    versions.map { record(table, $0, ref: "\(table)-r\($0)") }
}

/// Asserts that `body` throws a `StoreError` of `kind` and returns it for further checks.
@discardableResult
func assertThrows(
    _ kind: StoreError.Kind, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> some Any
) -> StoreError? {
    do {
        _ = try body()
        XCTFail("expected a \(kind) error, got none", file: file, line: line)
    } catch let error as StoreError {
        XCTAssertEqual(error.kind, kind, "\(error)", file: file, line: line)
        return error
    } catch {
        XCTFail("expected a StoreError, got \(error)", file: file, line: line)
    }
    return nil
}

extension SQLiteTableStore {
    /// Opens a store at `directory/name` with the default options changed by `configure`.
    static func open(
        in directory: URL, name: String = "tablecast.db", _ configure: (inout TableStoreOptions) -> Void = { _ in }
    )
        throws -> SQLiteTableStore
    {
        var options = TableStoreOptions()
        configure(&options)
        return try SQLiteTableStore(path: directory.appendingPathComponent(name).path, options: options)
    }

    /// Creates `name` with a recognizable initial snapshot.
    func createTestTable(_ name: String, epoch: Int64 = 1) throws {
        try createTable(
            name, epoch: epoch, rules: "{}", snapshot: "{\"table\":\"\(name)\",\"v\":0}", created: 1_700_000_000_000)
    }

    /// The first value a pragma returns, as text, read on the store's own connection.
    func pragma(_ name: String) throws -> String {
        try connection.prepare("PRAGMA \(name)").firstRow { $0.text(at: 0) } ?? ""
    }

    func count(_ table: String) throws -> Int64 {
        try connection.prepare("SELECT count(*) FROM \(table)").firstRow { $0.int64(at: 0) } ?? 0
    }
}
