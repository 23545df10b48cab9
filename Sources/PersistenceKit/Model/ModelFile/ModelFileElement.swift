import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// One element of a model file's XML, with its attributes, child elements and the line it
/// starts on (for error messages). The model reader walks this tree rather than reacting to
/// parser events, so that entities can name each other in any order.
struct ModelFileElement: Sendable {
    let name: String
    let attributes: [String: String]
    var children: [ModelFileElement]
    let line: Int

    /// The child elements named `name`, in document order.
    func children(named name: String) -> [ModelFileElement] { children.filter { $0.name == name } }

    /// Whether the XML attribute `name` reads `YES` (Xcode writes Boolean flags as YES/NO and
    /// leaves false ones out).
    func flag(_ name: String) -> Bool { attributes[name] == "YES" }

    /// Parses `data` (the XML of a `contents` file) into its root element.
    /// - Throws: `ModelFileError.malformedXML` with the parser's message and line.
    static func parse(_ data: Data, url: URL) throws(ModelFileError) -> ModelFileElement {
        let parser = XMLParser(data: data)
        let builder = TreeBuilder()
        parser.delegate = builder
        parser.shouldProcessNamespaces = false
        let ok = parser.parse()
        guard ok, let root = builder.root else {
            let message = parser.parserError.map { String(describing: $0) } ?? "no root element"
            throw ModelFileError(.malformedXML(message), url: url, line: parser.lineNumber)
        }
        return root
    }

    /// Collects parser events into a tree. Used on one thread, for one `parse()` call.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [ModelFileElement] = []
        var root: ModelFileElement?

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            stack.append(ModelFileElement(name: elementName, attributes: attributeDict, children: [], line: parser.lineNumber))
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard let element = stack.popLast() else { return }
            if stack.isEmpty {
                root = element
            } else {
                stack[stack.count - 1].children.append(element)
            }
        }
    }
}
