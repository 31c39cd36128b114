; TSX reads typescript.scm, then this: the components its markup uses.
(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call
(jsx_opening_element name: (member_expression) @name) @reference.call
(jsx_self_closing_element name: (member_expression) @name) @reference.call
