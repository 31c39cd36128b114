(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.class
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(source_file (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.constant)
(call_expression (simple_identifier) @name) @reference.call
(call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(user_type (type_identifier) @name) @reference.type
(import_declaration (identifier) @name) @reference.import
(line_str_text) @literal
; An extension qualifies its methods by the extended type without defining it again.
(class_declaration name: (user_type (type_identifier) @name)) @scope.methods
(init_declaration "init" @name) @definition.method
