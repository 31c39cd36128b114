(class_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.class
(enum_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(namespace_declaration name: (_) @name) @scope
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(property_declaration name: (identifier) @name) @definition.method
(field_declaration (variable_declaration (variable_declarator name: (identifier) @name))) @definition.field
(invocation_expression function: (identifier) @name) @reference.call
(invocation_expression function: (member_access_expression name: (identifier) @name)) @reference.call
(object_creation_expression type: (identifier) @name) @reference.call
(base_list (identifier) @name) @reference.type
(parameter type: (identifier) @name) @reference.type
(variable_declaration type: (identifier) @name) @reference.type
(using_directive (_) @name) @reference.import
(member_access_expression) @name @reference.attribute
(string_literal_content) @literal
