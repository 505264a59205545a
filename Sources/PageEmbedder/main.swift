import Foundation

// PageEmbedder OUTPUT FILE...: writes a Swift file declaring `enum EmbeddedPage` with each file's bytes, by name.
// Base64 in string literals: the compiler takes a long string in no time, where an array literal of the same bytes
// takes minutes to type-check.
let arguments = CommandLine.arguments.dropFirst()
guard let output = arguments.first else {
    FileHandle.standardError.write(Data("usage: PageEmbedder OUTPUT FILE...\n".utf8))
    exit(64)
}
var source = """
    import Foundation

    /// The browser page, embedded at build time by the EmbedPage plugin from web-client-protocol/client.
    enum EmbeddedPage {
        /// Each file's bytes, by name (`index.html`).
        static let files: [String: [UInt8]] = encoded.mapValues { Array(Data(base64Encoded: $0)!) }

        private static let encoded: [String: String] = [

    """
for path in arguments.dropFirst() {
    let url = URL(fileURLWithPath: path)
    let contents = try Data(contentsOf: url)
    source += "        \"\(url.lastPathComponent)\": \"\(contents.base64EncodedString())\",\n"
}
source += arguments.count > 1 ? "    ]\n}\n" : "    :]\n}\n"
try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
