package config

import (
	"reflect"
	"testing"
)

// TestTable checks the property table against itself and the structs it drives.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range brokerProps {
		if seen[p.name] {
			t.Errorf("broker property %s is defined twice", p.name)
		}
		seen[p.name] = true
		if p.doc == "" {
			t.Errorf("%s has no doc", p.name)
		}
		if !p.null {
			if err := p.validate(p.dflt); err != nil {
				t.Errorf("the default of %s is invalid: %v", p.name, err)
			}
		}
		if p.topic != "" {
			tp, ok := topicByName[p.topic]
			if !ok {
				t.Errorf("%s is the default of an unknown topic config %s", p.name, p.topic)
			} else if p.scale == 0 && p.typ != tp.typ {
				t.Errorf("%s is %s but its topic config %s is %s", p.name, p.typ, p.topic, tp.typ)
			}
		}
		if p.ignored && p.topic != "" {
			t.Errorf("ignored %s gives a topic default", p.name)
		}
	}
	d := Default()
	for _, p := range topicProps {
		if p.doc == "" {
			t.Errorf("%s has no doc", p.name)
		}
		v, _, _ := d.topicDefault(&p)
		if err := p.validate(v); err != nil {
			t.Errorf("the default of topic config %s is invalid: %v", p.name, err)
		}
	}
	checkTags(t, reflect.TypeOf(Broker{}), brokerByName)
	checkTags(t, reflect.TypeOf(TopicConfig{}), topicByName)
	for name, i := range taggedFields {
		if brokerByName[name].ignored {
			t.Errorf("Broker.%s is derived from ignored %s", reflect.TypeOf(Broker{}).Field(i).Name, name)
		}
	}
}

// checkTags makes sure every `config` tag names a property, once.
func checkTags(t *testing.T, typ reflect.Type, props map[string]*prop) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < typ.NumField(); i++ {
		tag := typ.Field(i).Tag.Get("config")
		if tag == "" {
			continue
		}
		if _, ok := props[tag]; !ok || seen[tag] {
			t.Errorf("%s.%s: tag %q is unknown or repeated", typ.Name(), typ.Field(i).Name, tag)
		}
		seen[tag] = true
	}
}
