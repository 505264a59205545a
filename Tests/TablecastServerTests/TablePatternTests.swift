import TablecastServer
import XCTest

final class TablePatternTests: XCTestCase {
    func testGlobMatching() {
        let cases: [(String, String, Bool)] = [
            ("*", "", true), ("*", "groceries", true), ("team-*", "team-", true), ("team-*", "team-red", true),
            ("team-*", "teams", false), ("a?c", "abc", true), ("a?c", "ac", false), ("*.log*", "x.log.1", true),
            ("a*b*c", "aXbYbZc", true), ("a*b*c", "aXbYbZ", false), ("exact", "exact", true),
            ("exact", "exactly", false),
        ]
        for (pattern, name, expected) in cases {
            XCTAssertEqual(TablePattern(pattern).matches(name), expected, "\(pattern) ~ \(name)")
        }
    }
}
